-- force: an administrator takes a key back from the holder they saw
-- (lockwatch release --force; record.lua comes first). Built by forceArgs.
local lockKey = KEYS[1]   -- deleted if the holder named holds it
local fenceKey = KEYS[2]  -- the fence record (record.lua); same hash slot
local queueKey = KEYS[3]  -- the wait queue and its entries (record.lua)
local entriesKey = KEYS[4]
local retention = ARGV[1] -- how long an idle key remembers its fence, in ms
local holder = ARGV[2]    -- the first 12 hex digits of the SHA-1 of the
--                           holder's owner token, as inspect.lua gives it
--
-- Only that holder: a copy of this script (a go-redis re-send) that comes
-- after a waiter took the key, or a force after the stuck holder released
-- and another took over, must not take the key from a healthy holder. A
-- shorter holder matches none, so the check never rests on the caller's.
--
-- The holder's token is barred with the mark '!': its next renewal learns
-- why the key is gone (renew.lua answers -1), and a late copy of its
-- acquire cannot take the key again. The fence record is kept, so the next
-- acquire mints above the holder's. The key is handed to the wait
-- queue's first live entry, as by a release.
--
-- Returns {released, sha1, fence}: released is 1 when that holder's lease
-- was taken by force, by this copy or an earlier one (while its '!' mark is
-- in the record), else 0 (the key is free or another's); sha1 is the
-- holder's taken, or the current holder's (nil when free), in hex; fence
-- is the newest minted for the key before the script (0: none remembered).
local function named(token)
  local hash = redis.sha1hex(token)
  return string.sub(hash, 1, 12) == holder, hash
end

local held = redis.call('GET', lockKey)
local fence, ended = parse(redis.call('GET', fenceKey))
fence = fence or 0
if held then
  local ok, hash = named(held)
  if ok then
    redis.call('DEL', lockKey)
    barOwner(fenceKey, held, retention, '!')
    local handoff = queue()
    handoff(lockKey, fenceKey, queueKey, entriesKey, retention)
    return {1, hash, fence}
  end
end
-- Not held by that holder: did a force already take the key from it?
for token in string.gmatch(ended or '', '!([^/+!~]+)') do
  local ok, hash = named(token)
  if ok then
    return {1, hash, fence}
  end
end
if held then
  return {0, redis.sha1hex(held), fence}
end
return {0, false, fence}
