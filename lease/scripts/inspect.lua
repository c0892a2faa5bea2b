-- inspect: read what Redis holds for a key, for an operator (lockwatch
-- inspect) or a health check. It writes nothing. (record.lua comes first.)
--
-- KEYS[1]  lock key
-- KEYS[2]  fence key (same hash slot)
--
-- Returns {holder, pttl, fence, barred}:
--   holder  the SHA-1 of the holder's owner token in hex, or nil when the
--           key is free: it tells holders apart, and the token itself, which
--           would let its reader release or renew the lease, never leaves
--           Redis
--   pttl    the lock key's PTTL (-2: free, -1: no expiry)
--   fence   the newest fence minted for the key, 0 when none is remembered
--   barred  the owner tokens barred on the fence record (both lists), or -1
--           for a record lockwatch cannot have written
local holder = redis.call('GET', KEYS[1])
local pttl = redis.call('PTTL', KEYS[1])
local fence, lists = parse(redis.call('GET', KEYS[2]))
local barred = -1
if lists then
  barred = select(2, string.gsub(lists, MARK, ''))
end
if holder then
  holder = redis.sha1hex(holder)
end
return {holder, pttl, fence or 0, barred}
