-- renew: extend the lease if, and only if, the lock still holds our owner
-- token under our fence. (record.lua comes first.)
--
-- KEYS[1]  lock key
-- KEYS[2]  fence key (same hash slot)
-- ARGV[1]  owner token
-- ARGV[2]  TTL in milliseconds
-- ARGV[3]  fence retention in milliseconds
-- ARGV[4]  the lease's fence, in decimal
--
-- Returns 1 when renewed; 0 when the key is gone or holds another token
-- (someone deleted it, or it expired and was taken), or holds our token
-- under a newer fence; -1 when an administrator took the key from us
-- (force.lua marked our token '!'), while that mark is in the record. The
-- fence record's retention restarts too, so a lease held for longer than
-- the retention keeps its record.
--
-- Why the fence: the owner token alone does not tell our acquisition from
-- a later one made with our token, by a late copy of our acquire (a
-- go-redis re-send, a command left in a stalled server's buffer) that
-- arrived after the key was freed and its bar had been pushed out of the
-- record. That copy mints a newer fence; renewing under it would undo a
-- force release or a release for good, and nobody would know. Only an
-- acquire that sets the lock mints, and it writes the record first: while
-- the lock holds our token, the record's fence is ours unless another
-- acquisition took it. A record without a fence while the lock holds our
-- token was lost on its own (evicted, deleted from outside: an acquisition
-- would have written one), and the renewal writes ours back, so that the
-- next acquire still mints above it.
local rec = redis.call('GET', KEYS[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  local digits = rec and string.match(rec, '^%d*') or ''
  if digits == ARGV[4] then
    redis.call('PEXPIRE', KEYS[2], ARGV[3])
  elseif digits ~= '' then
    return 0
  else
    local _, lists = parse(rec)
    if not lists then -- not a record lockwatch writes: leave it, and the key
      return 0
    end
    redis.call('SET', KEYS[2], ARGV[4] .. lists, 'PX', ARGV[3])
  end
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local _, lists = parse(rec)
if lists and endMark(lists, ARGV[1]) == '!' then
  return -1
end
return 0
