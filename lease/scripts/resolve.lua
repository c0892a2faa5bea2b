-- resolve: the clean-up of an unknown acquire. It releases what the acquire
-- may have taken and bars a copy of it that is still on its way.
--
-- KEYS[1]  lock key
-- KEYS[2]  fence key (same hash slot)
-- ARGV[1]  owner token of the unknown acquire
-- ARGV[2]  TTL in milliseconds (unused: the acquire's argument list is reused)
-- ARGV[3]  fence retention in milliseconds
--
-- Returns 1 when the acquire had taken the lock and it is now deleted, 0 when
-- the lock did not hold the token. Either way the token is barred.
--
-- Why the bar: an acquire that timed out may still sit, unread, in a socket
-- buffer of a stalled server, while this clean-up comes on another connection
-- and can be served first; and when it did run, a retry of it (go-redis
-- retries on a new connection) may still be on its way. Finding the lock free,
-- or freeing it, is then no proof that the acquire will not take it later. So
-- the token goes on the fence record, newest first, "<fence>/<owner>/...", at
-- most 16 of them (a token already listed moves to the front, so a retried
-- clean-up takes no second place): the acquire script refuses a token listed
-- there, and keeps the list when it mints a new fence. A missing record stays
-- without a fence ("/<owner>"), so a held lock without one is still reported.
local released = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  released = redis.call('DEL', KEYS[1])
end
local fence, barred = string.match(redis.call('GET', KEYS[2]) or '', '^(%d*)(.*)$')
local list, n = '/' .. ARGV[1], 1
for token in string.gmatch(barred, '/([^/]+)') do
  if n == 16 then
    break
  end
  if token ~= ARGV[1] then
    list, n = list .. '/' .. token, n + 1
  end
end
redis.call('SET', KEYS[2], fence .. list, 'PX', ARGV[3])
return released
