-- renew: extend the lease if, and only if, the lock still holds our owner
-- token under our fence (record.lua comes first). Built by renewArgs.
local lockKey = KEYS[1]   -- holds the owner token
local fenceKey = KEYS[2]  -- the fence record (record.lua); same hash slot
local owner = ARGV[1]     -- the lease's owner token
local ttl = ARGV[2]       -- in milliseconds
local retention = ARGV[3] -- the fence record's, in milliseconds
local fence = ARGV[4]     -- the lease's fence, in decimal
--
-- Returns 1 when renewed; 0 when the key is gone or holds another token,
-- or our token under a newer fence; -1 when an administrator took the key
-- from us (force.lua's mark '!' on our token), while the mark is in the
-- record. The record's retention restarts too.
--
-- Why the fence: the token alone does not tell our acquisition from a
-- later one made with our token by a late copy of our acquire (a go-redis
-- re-send, a command left in a stalled server's buffer) after the key was
-- freed and our bar pushed out; renewing that one would undo a force
-- release or a release for good. Only an acquire that sets the lock mints,
-- writing the record first: while the lock holds our token, the record's
-- fence is ours unless another acquisition took it. A record without a
-- fence under our lock was lost on its own (evicted, deleted from
-- outside), and the renewal writes ours back, so the next acquire still
-- mints above it.
local rec = redis.call('GET', fenceKey)
if redis.call('GET', lockKey) == owner then
  local digits = rec and string.match(rec, '^%d*') or ''
  if digits == fence then
    redis.call('PEXPIRE', fenceKey, retention)
  elseif digits ~= '' then
    return 0
  else
    local _, ended, cont = parse(rec)
    if not ended then -- not a record lockwatch writes: leave it, and the key
      return 0
    end
    redis.call('SET', fenceKey, fence .. ended .. cont, 'PX', retention)
  end
  return redis.call('PEXPIRE', lockKey, ttl)
end
local _, ended = parse(rec)
if ended and select(2, find(ended, '[/+!]', owner)) == '!' then
  return -1
end
return 0
