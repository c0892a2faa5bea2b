-- repair: set a key's high-water mark back when a token that no lease
-- carried moved it ahead of every lease, in one step (RedisStore.Repair,
-- lockwatch fence --force). model/lease.pml's operator is this script.
--
-- KEYS[1]  fence record (the hash write.lua and admit.lua keep)
-- ARGV[1]  seen: the mark the operator inspected, canonical decimal
-- ARGV[2]  floor: the newest fence minted for the lock key as the operator
--          read it (or the operator's own bound), canonical decimal
-- ARGV[3]  skew: the store's MaxSkew in microseconds, canonical decimal
--
-- The mark is set to target = max(floor, TIME in microseconds + skew), and
-- only if it is still the mark seen and above target. The target is what
-- makes a repair safe: every fence minted before the repair is at most
-- target, since fences are max(last + 1, TIME) on the leases' Redis, whose
-- clock is at most skew ahead of this one (the clock bound's assumption),
-- and floor was read after them, so no lease minted before the repair can
-- write after a newer one, even when the fence record was lost
-- (model/lease.pml's REPAIR and RLOSS, mutants REPAIR_WITHOUT_SKEW and
-- REPAIR_TO_RECORD). The mark still seen, and the floor, guard what the
-- model assumes away: a mark that moved since it was inspected may be a
-- lease's accepted write, and fences can run ahead of TIME (max(last + 1,
-- TIME) after a failover to a replica whose clock is behind).
--
-- Returns
--   {1, target}  set back: the id of the write that had set the mark is
--                blanked (no write's id is empty), the value left alone.
--   {0, mark}    nothing changed: the mark is still seen but not above
--                target (TIME has passed it, or floor is above it).
--   {2, mark}    nothing changed: the mark is no longer seen ('0': none);
--                inspect again.
--   an error     an argument or the stored mark is not canonical.
--
-- (canonical, greater and clock_plus come from tokens.lua, prepended by
-- repair.go.)
local seen, floor, skew = ARGV[1], ARGV[2], ARGV[3]
if not canonical(seen) or not canonical(floor) or not canonical(skew) then
  return redis.error_reply('LOCKWATCH repair arguments are not canonical')
end
local mark = redis.call('HGET', KEYS[1], 'fence')
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
redis.call('HSET', KEYS[1], 'fence', target, 'write', '')
return {1, target}
