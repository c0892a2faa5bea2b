-- renew: extend the lease if, and only if, it still holds our owner token.
--
-- KEYS[1]  lock key
-- ARGV[1]  owner token
-- ARGV[2]  TTL in milliseconds
--
-- Returns 1 when renewed, 0 when the key is gone or holds another token (the
-- lease is lost: someone deleted it, or it expired and was taken).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
