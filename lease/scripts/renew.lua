-- renew: extend the lease if, and only if, it still holds our owner token.
--
-- KEYS[1]  lock key
-- KEYS[2]  fence key (same hash slot)
-- ARGV[1]  owner token
-- ARGV[2]  TTL in milliseconds
-- ARGV[3]  fence retention in milliseconds
--
-- Returns 1 when renewed, 0 when the key is gone or holds another token (the
-- lease is lost: someone deleted it, or it expired and was taken). The fence
-- record's retention restarts too, so a lease held for longer than the
-- retention keeps its record.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
