-- release: compare-and-delete, so a holder can never delete a lock it lost.
--
-- KEYS[1]  lock key
-- ARGV[1]  owner token
--
-- Returns 1 when deleted, 0 when the key is gone or holds another token.
-- The fence key is kept: the next acquire must mint a larger token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
