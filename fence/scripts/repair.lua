-- repair: set a key's high-water mark back when a token that no lease
-- carried moved it ahead of every lease, in one step (RedisStore.Repair,
-- lockwatch fence --force; tokens.lua comes first). Built by repairArgs.
local record = KEYS[1] -- the hash write.lua and admit.lua keep
local seen = ARGV[1]   -- the mark the operator inspected
local floor = ARGV[2]  -- the newest fence minted for the lock key, as read
local skew = ARGV[3]   -- the store's MaxSkew in µs (all canonical decimals)

-- The mark is set to target = max(floor, TIME in µs + skew), and only if
-- it is still seen and above target. Every fence minted before the repair
-- is at most target (fences are max(last + 1, TIME) on the leases' Redis,
-- whose clock is at most skew ahead of this one; floor was read after
-- them), so no lease minted before can write after a newer one, even when
-- the fence record was lost: model/lease.pml's operator, scenarios REPAIR
-- and RLOSS. seen and floor guard what the model assumes away: a mark
-- that moved since may be a lease's write, and fences can run ahead of
-- TIME after a failover to a replica whose clock is behind.

-- Returns
--   {1, target}  set back, the write id blanked (no write's id is empty).
--   {0, mark}    unchanged: seen, but not above target.
--   {2, mark}    unchanged: the mark is no longer seen ('0': none).
--   an error     an argument or the stored mark is not canonical.
if not canonical(seen) or not canonical(floor) or not canonical(skew) then
  return redis.error_reply('LOCKWATCH repair arguments are not canonical')
end
local mark = redis.call('HGET', record, 'fence')
if mark and not canonical(mark) then
  return redis.error_reply('LOCKWATCH stored fence is not canonical')
end
if mark ~= seen then
  return {2, mark or '0'}
end
local target = clock_plus(skew)
if greater(floor, target) then
  target = floor
end
if not greater(mark, target) then
  return {0, mark}
end
redis.call('HSET', record, 'fence', target, 'write', '')
return {1, target}
