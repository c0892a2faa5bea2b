-- release: end an attempt. It deletes the lock if the lock holds the
-- attempt's owner token, and bars the token, so no copy of the attempt that
-- is still on its way can take the key afterwards. Release and the clean-up
-- of an unknown acquire both run it. (record.lua comes first.)
--
-- KEYS[1]  lock key
-- KEYS[2]  fence key (same hash slot)
-- KEYS[3]  wait mark (same hash slot): set while an Acquire may wait
-- ARGV[1]  owner token
-- ARGV[2]  TTL in milliseconds (unused: the acquire's argument list is reused)
-- ARGV[3]  fence retention in milliseconds
--
-- A deletion of a key someone may wait for (its wait mark exists) is
-- published on the key's release channel (the lock key with the suffix r
-- for l), which wakes a waiting Acquire (wakeups, in Go). The publish comes
-- last and may fail (an ACL without the channel, a renamed command): that
-- leaves the waiter to its backoff and changes nothing else.
--
-- Returns 1 when this attempt's release deleted the lock: this copy, or
-- an earlier copy of the same command (go-redis re-sends a command whose
-- reply was lost, and the copy that answers must report what the first
-- did: the token's mark '+' on the ended list says so). Returns 0 when no
-- copy did: the lock had expired, or the acquire never ran, or an
-- administrator took it (mark '!'). Either way the token is barred (unless
-- Redis refuses the write: maxmemory under noeviction), and the fence
-- record is kept: the next acquire must mint a larger token.
--
-- Why the bar: an acquire that timed out may still sit, unread, in a socket
-- buffer of a stalled server while this script comes on another connection
-- and is served first; and when it did run, a retry of it (go-redis
-- retries on a new connection) may still be on its way, also after a lease
-- was released normally. Finding the lock free, or freeing it, is no proof
-- that such a copy will not take the key later; the bar is (record.lua).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  barOwner(ARGV[1], ARGV[3], '+')
  if KEYS[3] then
    wake()
  end
  return 1
end
if barOwner(ARGV[1], ARGV[3], '/') == '+' then
  return 1
end
return 0
