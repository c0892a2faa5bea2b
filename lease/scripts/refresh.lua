-- refresh: a queued waiter keeps its place and learns whether the key is
-- its (record.lua comes first). Built by refreshArgs (scripts.go).
local lockKey = KEYS[1]   -- holds the owner token
local fenceKey = KEYS[2]  -- the fence record (record.lua); same hash slot
local queueKey = KEYS[3]  -- the wait queue and its entries (record.lua)
local entriesKey = KEYS[4]
local owner = ARGV[1]     -- the waiting attempt's owner token
local entryTTL = tonumber(ARGV[2]) -- the entry's new lifetime, in ms
local retention = ARGV[3] -- how long an idle key remembers its fence, in ms
--
-- A free key (its lock expired) is handed on first, as release.lua does.
-- The entry keeps its grant channel.
-- Returns
--   {1, fence}  granted: the lock holds owner, under fence (the grant's
--               message may still be on its way, or lost).
--   {2, pttl, replica}  waiting: owner's entry is live, and lives
--               entryTTL from now; pttl is the lock's, replica its
--               holder's (as acquire.lua answers it).
--   {0, -4}     gone: no live entry, and the key is not owner's (an
--               expired entry is dropped). A next attempt joins the tail.
--   error "LOCKWATCH ..."  a free key cannot be handed on (acquire.lua's
--               refusals), or the lock holds owner without a fence.
local handoff, _, entryOf, keepEntries, nowMs = queue()
local holder = redis.call('GET', lockKey)
if not holder then
  local why
  holder, why = handoff(lockKey, fenceKey, queueKey, entriesKey, retention)
  if why then
    return redis.error_reply(why)
  end
end
if holder == owner then
  return heldBy(fenceKey)
end
local entry, live, ttl, channel = entryOf(entriesKey, owner)
if live then
  redis.call('HSET', entriesKey, owner, string.format('%d %s %s', nowMs() + entryTTL, ttl, channel))
  keepEntries(queueKey, entriesKey, entryTTL)
  return {2, redis.call('PTTL', lockKey), string.match(holder or '', '@([^@]*)$') or ''}
end
if entry then
  redis.call('HDEL', entriesKey, owner)
  redis.call('LREM', queueKey, 1, owner)
end
return {0, -4}
