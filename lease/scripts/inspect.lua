-- inspect: read what Redis holds for a key, for an operator (lockwatch
-- inspect) or a health check; it writes nothing (record.lua comes first).
local lockKey = KEYS[1]  -- holds the owner token
local fenceKey = KEYS[2] -- the fence record (record.lua); same hash slot
--
-- Returns {holder, pttl, fence, barred, replica}:
--   holder  the SHA-1 of the holder's owner token in hex, nil when free:
--           it tells holders apart, and the token, which would let its
--           reader release or renew the lease, never leaves Redis
--   pttl    the lock key's PTTL (-2: free, -1: no expiry)
--   fence   the newest fence minted for the key, 0 when none is remembered
--   barred  how many owner tokens the record bars (both lists), -1 for a
--           record lockwatch cannot have written
--   replica the holder's replica, the text after the last '@' of its
--           token ('' when free or without one), as acquire.lua names it
local holder = redis.call('GET', lockKey)
local pttl = redis.call('PTTL', lockKey)
local fence, ended, cont = parse(redis.call('GET', fenceKey))
local barred = -1
if ended then
  barred = select(2, string.gsub(ended .. cont, '[/+!~]', ''))
end
local replica = ''
if holder then
  replica = string.match(holder, '@([^@]*)$') or ''
  holder = redis.sha1hex(holder)
end
return {holder, pttl, fence or 0, barred, replica}
