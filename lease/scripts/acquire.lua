-- acquire: take the lease on a key and mint its fencing token, in one step
-- (record.lua comes first). Built by acquireArgs (scripts.go).
local lockKey = KEYS[1]   -- holds the owner token; expires after the TTL
local fenceKey = KEYS[2]  -- the fence record (record.lua); same hash slot
local waitKey = KEYS[3]   -- the wait mark (same hash slot): a release publishes
local owner = ARGV[1]     -- this attempt's owner token (every attempt has one)
local ttl = ARGV[2]       -- in milliseconds
local retention = ARGV[3] -- how long an idle key remembers its fence, in ms
local wait = tonumber(ARGV[4]) -- how long this Acquire may still wait, in ms
local GHOSTS = 5          -- ARGV[5..]: the Locker's ghosts of the key
--
-- The ghosts are the owner tokens of the Locker's earlier attempts whose
-- end Redis may not have recorded (a clean-up or a release without a
-- reply): nobody works under them, and the Locker must never be refused
-- by one. Unless the script refuses, a lock one of them holds is deleted
-- (mark '+'), and each is barred, before the acquire goes on.
--
-- Returns
--   {1, fence}  acquired. Also when the lock already holds owner: a copy of
--               this attempt (a go-redis re-send) ran first, and the client
--               gets the same fence, never a second lock.
--   {0, pttl}   held by another (pttl: its remaining TTL in ms, -1 none).
--               owner is barred '~', so that a copy of this attempt that
--               comes after the holder left cannot take the key. A caller
--               that will wait sets the wait mark for as long as it may
--               wait (the longest wait wins); a release nobody waits for
--               publishes nothing (on Cluster a PUBLISH reaches every node).
--   {0, -3}     owner is barred: a late copy of an answered attempt.
--   error "LOCKWATCH refused: ..."  nothing written: the server cannot
--               replicate script effects, the record is not lockwatch's,
--               or the fences are exhausted.
--
-- The fence is max(last + 1, server TIME in microseconds): the TIME part
-- keeps it increasing when the record is gone (a restart without
-- persistence) or stale (a promoted replica that missed the last
-- acquires). Microseconds since 1970 stay below 2^53 until 2255.
if not EFFECTS then
  return redis.error_reply('LOCKWATCH refused: the server cannot replicate script effects')
end
local holder = redis.call('GET', lockKey)
if holder == owner then
  local fence = parse(redis.call('GET', fenceKey))
  if not fence then
    return redis.error_reply('LOCKWATCH fence record missing or unreadable for a held lock')
  end
  return {1, fence}
end

-- endGhosts bars the ghosts, deleting the lock if one of them holds it.
local function endGhosts()
  for i = GHOSTS, #ARGV do
    if holder == ARGV[i] then
      redis.call('DEL', lockKey)
      barOwner(fenceKey, ARGV[i], retention, '+')
    else
      barOwner(fenceKey, ARGV[i], retention, '/')
    end
  end
end

local ghostHolds = false
for i = GHOSTS, #ARGV do
  ghostHolds = ghostHolds or holder == ARGV[i]
end
if holder and not ghostHolds then
  endGhosts()
  local pttl = redis.call('PTTL', lockKey)
  barOwner(fenceKey, owner, retention, '~')
  if wait > 0 and redis.call('PTTL', waitKey) < wait then
    redis.pcall('SET', waitKey, '1', 'PX', wait)
  end
  return {0, pttl}
end
-- The key is free, or held by a ghost. Refusals come before any write.
local rec = redis.call('GET', fenceKey)
local last, ended, cont = parse(rec)
if not ended then
  return redis.error_reply('LOCKWATCH refused: the fence record is not one lockwatch writes: ' .. string.sub(rec, 1, 40))
end
local now = redis.call('TIME')
local fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
if last and last >= fence then
  if last >= FENCE_MAX then
    return redis.error_reply('LOCKWATCH refused: the fences of this key are exhausted (2^53 - 1)')
  end
  fence = last + 1
end
if #ARGV >= GHOSTS then
  endGhosts()
  last, ended, cont = parse(redis.call('GET', fenceKey)) -- with the ghosts' bars
end
if isBarred(ended, cont, owner) then
  return {0, -3}
end
redis.call('SET', fenceKey, string.format('%d', fence) .. ended .. cont, 'PX', retention)
redis.call('SET', lockKey, owner, 'PX', ttl)
return {1, fence}
