-- repair: set a key's high-water mark back to the newest fence minted for
-- its lock key, when a token that no lease carried moved it ahead of every
-- lease, in one step (RedisStore.Repair, lockwatch fence --force).
--
-- KEYS[1]  fence record (the hash write.lua and admit.lua keep)
-- ARGV[1]  minted: the newest fence minted for the lock key, canonical
--          decimal, 1 to 2^63-1
--
-- Returns
--   {1, mark}  set back: the mark was above ARGV[1] and is now ARGV[1]; the
--              id of the write that had set it is cleared (it set a mark no
--              longer there; '' is no write's id). mark is the mark before.
--   {0, mark}  nothing changed: the mark is at or below ARGV[1]; '0' when
--              the key has no mark. Running a repair twice is thus the same
--              as running it once.
--   an error   ARGV[1] or the stored mark is not canonical (nothing changed).
--
-- The value is left as it is: it is whatever the last accepted write stored,
-- and the next accepted write replaces it.
--
-- (canonical and greater come from tokens.lua, prepended by repair.go.)
local minted = ARGV[1]
if not canonical(minted) then
  return redis.error_reply('LOCKWATCH minted fence is not canonical')
end
local mark = redis.call('HGET', KEYS[1], 'fence')
if not mark then
  return {0, '0'}
end
if not canonical(mark) then
  return redis.error_reply('LOCKWATCH stored fence is not canonical')
end
if not greater(mark, minted) then
  return {0, mark}
end
-- HSET, not HDEL: the store's ACL grants the commands its writes use.
redis.call('HSET', KEYS[1], 'fence', minted, 'write', '')
return {1, mark}
