// Package fence is the resource side of lockwatch: the fencing token, its
// wire form, and stores that check a write's token and make the write in one
// atomic step.
//
// A lease alone cannot stop a holder that paused past its TTL from writing
// after another holder took over. The fence can: every lease carries a token
// that strictly increases per lock key, every write carries the token of the
// lease it was made under, and the resource rejects a token older than the
// newest it accepted. The check and the write must be one atomic step (a Lua
// script, one SQL statement): a check here and a write there leaves the
// window the fence exists to close.
//
// Tokens are per lock key. A resource compares the tokens of one key only:
// keep one high-water mark per lock key (or per item a lock key protects),
// never one for a whole table guarded by many keys.
package fence
