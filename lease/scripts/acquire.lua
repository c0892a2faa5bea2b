-- acquire: take the lease on a key and mint its fencing token, in one step
-- (record.lua comes first). Built by acquireArgs (scripts.go).
local lockKey = KEYS[1]   -- holds the owner token; expires after the TTL
local fenceKey = KEYS[2]  -- the fence record (record.lua); same hash slot
local queueKey = KEYS[3]  -- the wait queue and its entries (record.lua)
local entriesKey = KEYS[4]
local owner = ARGV[1]     -- this attempt's owner token (every attempt has one)
local ttl = ARGV[2]       -- in milliseconds
local retention = ARGV[3] -- how long an idle key remembers its fence, in ms
local entryTTL = tonumber(ARGV[4]) -- > 0: a held key queues owner, live so long (ms)
local channel = ARGV[5]   -- the Locker's grant channel ('': none), for the entry
local GHOSTS = 6          -- ARGV[6..]: the Locker's ghosts of the key
--
-- The ghosts are the owner tokens of the Locker's earlier attempts whose
-- end Redis may not have recorded (a clean-up or a release without a
-- reply): nobody works under them, and the Locker must never be refused
-- by one. Unless the script refuses, a lock one of them holds is deleted
-- (mark '+'), and each is barred and leaves the wait queue (a leave
-- without a reply left its entry there), before the acquire goes on: no
-- hand-off grants a ghost.
--
-- A free key goes to the wait queue's first live entry before anyone else
-- (record.lua's handoff): a newcomer never passes a live waiter.
--
-- Returns
--   {1, fence}  acquired. Also when the lock already holds owner: a copy of
--               this attempt (a go-redis re-send) ran first, and the client
--               gets the same fence, never a second lock; or when this
--               script's hand-off grants the entry such a copy queued.
--   {0, pttl, replica}  held by another (pttl: its remaining TTL in ms,
--               -1 none; replica: the holder's, the text after the last
--               '@' of its token, '' without one: never the token itself,
--               which would let its reader release the lease). owner is
--               barred '~', so that a copy of this attempt that comes
--               after the holder left cannot take the key.
--   {2, pttl, place, replica}  with entryTTL > 0, held by another (pttl
--               and replica as above): owner is queued
--               at place (0: already queued, by a copy of this attempt
--               whose reply was lost: its entry stays) and barred '~';
--               the grant comes as "<owner> <fence>" on channel, or from
--               refresh.lua.
--   {0, -3}     owner is barred: a late copy of an answered attempt.
--   error "LOCKWATCH refused: ..."  nothing written: the server cannot
--               replicate script effects, the record is not lockwatch's,
--               or the fences are exhausted.
if not EFFECTS then
  return redis.error_reply('LOCKWATCH refused: the server cannot replicate script effects')
end
local handoff, enqueue = queue()
local holder = redis.call('GET', lockKey)
if holder == owner then
  return heldBy(fenceKey)
end

local ghostHolds = false
for i = GHOSTS, #ARGV do
  ghostHolds = ghostHolds or holder == ARGV[i]
end
local free = not holder or ghostHolds -- or a ghost's, deleted below
local last, ended, cont, granted
if free then -- refusals come before any write
  local rec = redis.call('GET', fenceKey)
  last, ended, cont = parse(rec)
  local why = refusal(rec, last, ended)
  if why then
    return redis.error_reply(why)
  end
end
-- The ghosts are barred (the lock deleted if one of them holds it), and
-- their entries dropped.
for i = GHOSTS, #ARGV do
  if holder == ARGV[i] then
    redis.call('DEL', lockKey)
    barOwner(fenceKey, ARGV[i], retention, '+')
  else
    barOwner(fenceKey, ARGV[i], retention, '/')
  end
  if redis.call('HDEL', entriesKey, ARGV[i]) == 1 then
    redis.call('LREM', queueKey, 1, ARGV[i])
  end
end
if free then
  if #ARGV >= GHOSTS then
    last, ended, cont = parse(redis.call('GET', fenceKey)) -- with the ghosts' bars
  end
  granted = handoff(lockKey, fenceKey, queueKey, entriesKey, retention)
  if granted == owner then
    return heldBy(fenceKey) -- the entry a copy of this attempt queued
  elseif not granted then
    if isBarred(ended, cont, owner) then
      return {0, -3}
    end
    local fence = mint(fenceKey, retention, last, ended, cont)
    redis.call('SET', lockKey, owner, 'PX', ttl)
    return {1, fence}
  end
end
-- Another holds the key, or the hand-off above granted it.
local pttl = redis.call('PTTL', lockKey)
local replica = string.match(granted or holder, '@([^@]*)$') or ''
if entryTTL > 0 then
  ended, cont = select(2, parse(redis.call('GET', fenceKey)))
  if ended and isBarred(ended, cont, owner) then
    if redis.call('HGET', entriesKey, owner) then
      return {2, pttl, 0, replica}
    end
    return {0, -3}
  end
  local place = enqueue(queueKey, entriesKey, owner, entryTTL, ttl, channel)
  barOwner(fenceKey, owner, retention, '~')
  return {2, pttl, place, replica}
end
barOwner(fenceKey, owner, retention, '~')
return {0, pttl, replica}
