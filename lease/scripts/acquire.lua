-- acquire: take the lease on a key and mint its fencing token, in one step.
-- (record.lua comes first: parse, isBarred, barOwner, FENCE_MAX.)
--
-- KEYS[1]  lock key  (holds the owner token, expires after the TTL)
-- KEYS[2]  fence key (the key's fence record, see record.lua; same hash slot)
-- KEYS[3]  wait mark (same hash slot): tells the release to publish
-- ARGV[1]  owner token of this attempt (crypto/rand Text: 26 base32
--          characters; every attempt of an Acquire has its own)
-- ARGV[2]  TTL in milliseconds
-- ARGV[3]  fence retention in milliseconds (how long an idle key remembers
--          its last token)
-- ARGV[4]  how long this Acquire may still wait, in milliseconds (0: it
--          will not wait)
-- ARGV[5..] the owner tokens of the Locker's own earlier attempts on the
--          key whose end Redis may not have recorded (a clean-up or a
--          release without a reply): nobody works under them, and the
--          Locker must never be refused by one of them. Unless the script
--          refuses, a lock one of them holds is deleted (mark '+'), and
--          each is barred, before the acquire goes on.
--
-- Returns
--   {1, fence}  acquired. Also when the lock already holds ARGV[1]: a copy
--               of this attempt (a go-redis retry) ran first, and the
--               client, which counts validity from before its first send,
--               gets the same fence, never a second lock.
--   {0, pttl}   held by another owner; pttl is its remaining TTL in ms (-1:
--               none). The attempt has its answer, so ARGV[1] is barred: a
--               copy of it that arrives after the holder left cannot take
--               the key. A caller that will wait sets the wait mark for as
--               long as it may wait (the longest wait wins), so that the
--               release publishes; a release nobody waits for publishes
--               nothing (on Cluster a PUBLISH goes to every node).
--   {0, -3}     ARGV[1] is barred: this attempt was answered, released or
--               cleaned up before (a late copy).
--   error "LOCKWATCH refused: ..."  nothing was written: the server cannot
--               replicate this script's effects, or the fence record is
--               not one lockwatch wrote, or the fences are exhausted.
--
-- The token is max(last + 1, server TIME in microseconds): the TIME part
-- keeps it increasing when the fence key is gone (restart without
-- persistence) or stale (a promoted replica that missed the last
-- increments). Microseconds since 1970 stay below 2^53 until the year
-- 2255.
--
-- The script reads TIME before it writes. Replicas must then get its
-- effects (the SETs), not the script to run again: record.lua switches to
-- effects replication, and a server that cannot is refused loudly.
if not EFFECTS then
  return redis.error_reply('LOCKWATCH refused: the server cannot replicate script effects')
end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  local fence = parse(redis.call('GET', KEYS[2]))
  if not fence then
    return redis.error_reply('LOCKWATCH fence record missing or unreadable for a held lock')
  end
  return {1, fence}
end

-- endGhosts bars the Locker's ghosts (ARGV[5..]), deleting the lock if
-- one of them holds it, and tells whether it did.
local function endGhosts()
  local freed = false
  for i = 5, #ARGV do
    if holder == ARGV[i] then
      redis.call('DEL', KEYS[1])
      freed = true
      barOwner(ARGV[i], ARGV[3], '+')
    else
      barOwner(ARGV[i], ARGV[3], '/')
    end
  end
  return freed
end

local ghostHolds = false
for i = 5, #ARGV do
  ghostHolds = ghostHolds or holder == ARGV[i]
end
if holder and not ghostHolds then
  endGhosts()
  local pttl = redis.call('PTTL', KEYS[1])
  barOwner(ARGV[1], ARGV[3], '~')
  local wait = tonumber(ARGV[4] or '0') or 0
  if KEYS[3] and wait > 0 and redis.call('PTTL', KEYS[3]) < wait then
    redis.pcall('SET', KEYS[3], '1', 'PX', wait)
  end
  return {0, pttl}
end
-- The key is free, or held by a ghost. Refusals come before any write.
local rec = redis.call('GET', KEYS[2])
local last, lists = parse(rec)
if not lists then
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
if #ARGV >= 5 then
  endGhosts()
  last, lists = parse(redis.call('GET', KEYS[2])) -- with the ghosts' bars
end
if isBarred(lists, ARGV[1]) then
  return {0, -3}
end
redis.call('SET', KEYS[2], string.format('%d', fence) .. lists, 'PX', ARGV[3])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, fence}
