-- acquire: take the lease on a key and mint its fencing token, in one step.
--
-- KEYS[1]  lock key  (holds the owner token, expires after the TTL)
-- KEYS[2]  fence key (holds the last fencing token minted for this key; same hash slot)
-- ARGV[1]  owner token of this acquire (crypto/rand Text: 26 base32 characters)
-- ARGV[2]  TTL in milliseconds
-- ARGV[3]  fence retention in milliseconds (how long an idle key remembers its last token)
--
-- Returns
--   {1, fence}  acquired. Also when the lock already holds ARGV[1]: a client that
--               retries after a lost reply gets the same fence, never a second lock.
--   {0, pttl}   held by another owner; pttl is its remaining TTL in ms (-1: none).
--   {0, -3}     ARGV[1] is barred: the acquire was unknown and its clean-up
--               (resolve.lua) ran first. Nobody waits for this reply.
--
-- The fence record is "<fence>", or "<fence>/<owner>/..." with the tokens of
-- unknown acquires that resolve.lua barred; minting keeps that list.
--
-- The token is max(last + 1, server TIME in microseconds): the TIME part keeps it
-- increasing when the fence key is gone (restart without persistence) or stale
-- (a promoted replica that missed the last increments). Microseconds since 1970
-- stay below 2^53 until the year 2255, so Lua's doubles hold them exactly and
-- string.format('%d') writes every digit.
local function split(rec)
  local last = tonumber(rec)
  if last or not rec then
    return last, ''
  end
  local digits, barred = string.match(rec, '^(%d*)(.*)$')
  return tonumber(digits), barred
end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  local fence = split(redis.call('GET', KEYS[2]))
  if not fence then
    return redis.error_reply('LOCKWATCH fence record missing for a held lock')
  end
  return {1, fence}
end
if holder then
  return {0, redis.call('PTTL', KEYS[1])}
end
local last, barred = split(redis.call('GET', KEYS[2]))
if barred ~= '' and string.find(barred .. '/', '/' .. ARGV[1] .. '/', 1, true) then
  return {0, -3}
end
local now = redis.call('TIME')
local fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
if last and last >= fence then
  fence = last + 1
end
redis.call('SET', KEYS[2], string.format('%d', fence) .. barred, 'PX', ARGV[3])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, fence}
