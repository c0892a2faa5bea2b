-- force: an administrator takes a key back from the holder they saw
-- (lockwatch release --force). (record.lua comes first.)
--
-- KEYS[1]  lock key
-- KEYS[2]  fence key (same hash slot)
-- KEYS[3]  wait mark (same hash slot)
-- ARGV[1]  fence retention in milliseconds
-- ARGV[2]  the holder to take it from: the start of the SHA-1 (hex) of its
--          owner token, as inspect.lua returns it
--
-- Only that holder: a copy of this script (go-redis re-sends a command
-- whose reply was lost) that comes after a waiter took the key, or a force
-- that comes after the stuck holder released and another took over, must
-- not take the key from a healthy holder.
--
-- The holder's token is barred on the ended list, as the clean-up of an
-- unknown acquire bars its own: the holder's next renewal finds the key
-- gone and loses the lease (renewal_rejected), and a late copy of the
-- holder's acquire cannot take the key again. The fence record is kept, so
-- the next acquire mints a larger token than the holder's. A waiter is
-- woken as by a release.
--
-- Returns {released, holder, fence}: released is 1 when the key was taken
-- from that holder and is now free, else 0 (the key is free, or held by
-- another); holder is the SHA-1 of the current (or just released) holder's
-- token in hex, nil when free; fence is the newest minted for the key (0:
-- none remembered).
local holder = redis.call('GET', KEYS[1])
local fence = parse(redis.call('GET', KEYS[2])) or 0
if not holder then
  return {0, false, fence}
end
local hash = redis.sha1hex(holder)
-- The first 12 hex digits (holderHashLen), never fewer: a shorter ARGV[2]
-- must match no holder, so that the check does not rest on the caller's.
if string.sub(hash, 1, 12) ~= ARGV[2] then
  return {0, hash, fence}
end
redis.call('DEL', KEYS[1])
barOwner(holder, ARGV[1], false)
wake()
return {1, hash, fence}
