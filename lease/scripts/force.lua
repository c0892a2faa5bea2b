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
-- The holder's token is barred on the ended list with the mark '!': the
-- holder's next renewal finds the key gone and learns why (renew.lua
-- answers -1: force_released), and a late copy of the holder's acquire
-- cannot take the key again. The fence record is kept, so the next
-- acquire mints a larger token than the holder's. A waiter is woken as by
-- a release.
--
-- Returns {released, holder, fence}: released is 1 when that holder's
-- lease has been taken by force, by this copy or an earlier copy of the
-- command (a go-redis re-send answers for its first copy: it finds the
-- holder's token marked '!', while the mark is in the record), else 0 (the
-- key is free, or held by another); holder is the SHA-1 of the holder
-- taken (or of the current holder, nil when free) in hex; fence is the
-- newest minted for the key (0: none remembered).
-- The first 12 hex digits (holderHashLen), never fewer: a shorter ARGV[2]
-- must match no holder, so that the check does not rest on the caller's.
local function named(owner)
  local hash = redis.sha1hex(owner)
  return string.sub(hash, 1, 12) == ARGV[2], hash
end

local holder = redis.call('GET', KEYS[1])
local fence, lists = parse(redis.call('GET', KEYS[2]))
fence = fence or 0
if holder then
  local ok, hash = named(holder)
  if ok then
    redis.call('DEL', KEYS[1])
    barOwner(holder, ARGV[1], '!')
    wake()
    return {1, hash, fence}
  end
end
-- Not held by that holder: did a force already take the key from it?
for owner in string.gmatch(string.sub(lists or '', 1, split(lists or '') - 1), '!([^/+!~]+)') do
  local ok, hash = named(owner)
  if ok then
    return {1, hash, fence}
  end
end
if holder then
  return {0, redis.sha1hex(holder), fence}
end
return {0, false, fence}
