-- force: an administrator takes a key back from whoever holds it (lockwatch
-- release --force). (record.lua comes first.)
--
-- KEYS[1]  lock key
-- KEYS[2]  fence key (same hash slot)
-- KEYS[3]  wait mark (same hash slot)
-- ARGV[1]  fence retention in milliseconds
--
-- The holder's token is barred on the ended list, as the clean-up of an
-- unknown acquire bars its own: the holder's next renewal finds the key
-- gone and loses the lease (renewal_rejected), and a late copy of the
-- holder's acquire cannot take the key again. The fence record is kept, so
-- the next acquire mints a larger token than the holder's. A waiter is woken
-- as by a release.
--
-- Returns {1, holder, fence} when the key was held and is now free, and
-- {0, nil, fence} when it was free; holder is the SHA-1 of the token in hex
-- (as inspect returns it), fence the newest minted for the key (0: none).
local holder = redis.call('GET', KEYS[1])
local fence = parse(redis.call('GET', KEYS[2])) or 0
if not holder then
  return {0, false, fence}
end
redis.call('DEL', KEYS[1])
barOwner(holder, ARGV[1], false)
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.pcall('PUBLISH', string.sub(KEYS[1], 1, -2) .. 'r', '')
end
return {1, redis.sha1hex(holder), fence}
