-- release: end an attempt (record.lua comes first). Release and the
-- clean-up of an unknown acquire both run it. Built by releaseArgs.
local lockKey = KEYS[1]   -- deleted if it holds owner
local fenceKey = KEYS[2]  -- the fence record (record.lua); same hash slot
local queueKey = KEYS[3]  -- the wait queue and its entries (record.lua)
local entriesKey = KEYS[4]
local owner = ARGV[1]     -- the attempt's owner token
local retention = ARGV[2] -- how long an idle key remembers its fence, in ms
--
-- Returns 1 when this attempt's release deleted the lock: this copy, or
-- an earlier copy of the command (go-redis re-sends a command whose reply
-- was lost; owner's mark '+' says what the first did). Returns 0 when no
-- copy did: the lock had expired, the acquire never ran, or an
-- administrator took it ('!'). Either way owner is barred and the fence
-- record kept: the next acquire mints a larger fence.
--
-- Why the bar: an acquire that timed out may still sit in a stalled
-- server's socket buffer while this script, on another connection, is
-- served first, and a retry of an acquire that ran may still be on its
-- way. Finding the lock free, or freeing it, is no proof that such a copy
-- will not take the key later; the bar is.
--
-- A waiter that gives up sends it too (its leave): its queue entry goes,
-- and a key granted to it already is released. A key left free, by this
-- release or an expiry, is handed to the queue's first live entry, whose
-- grant goes to the channel its entry names (record.lua's handoff).
local holder = redis.call('GET', lockKey)
local released = 0
if holder == owner then
  redis.call('DEL', lockKey)
  barOwner(fenceKey, owner, retention, '+')
  released = 1
elseif barOwner(fenceKey, owner, retention, '/') == '+' then
  released = 1
end
if redis.call('EXISTS', queueKey) == 1 then
  if redis.call('HDEL', entriesKey, owner) == 1 then
    redis.call('LREM', queueKey, 1, owner)
  end
  if not holder or holder == owner then
    local handoff = queue()
    handoff(lockKey, fenceKey, queueKey, entriesKey, retention)
  end
end
return released
