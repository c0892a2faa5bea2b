-- write: store a value if its fencing token is newer than every token the key
-- accepted, and make that token the key's high-water mark, in one step.
--
-- KEYS[1]  fence record: a hash with fields value (the data), fence (the
--          high-water mark, canonical decimal) and write (the id of the write
--          that set the mark)
-- ARGV[1]  fence of the write's token: canonical decimal, 1 to 2^63-1 (no
--          sign, no leading zeros)
-- ARGV[2]  value
-- ARGV[3]  write id: random and not empty, one per RedisStore.Write call, so
--          that every copy of one call carries it and no other call does
-- ARGV[4]  the skew allowed above this server's TIME, in microseconds, for
--          an unsigned token; '' for a signed one (fence/policy.go)
--
-- Returns
--   {1, mark}  written: value, fence and write replaced together. mark is the
--              previous high-water mark, '0' when the key had none.
--   {2, mark}  already written: ARGV[1] = mark and ARGV[3] = write, so this is a
--              copy of the write that set the mark, sent again after its reply
--              was lost; nothing written again. mark is the token.
--   {3, mark}  ahead: ARGV[1] > TIME + ARGV[4]; nothing written.
--   {0, mark}  stale: ARGV[1] <= mark, and not a copy of the write that set the
--              mark; nothing written. Strict: a token the key already accepted is
--              rejected, so a reused token never writes twice.
--   an error   the stored mark or ARGV[1] is not a canonical token, or ARGV[3]
--              is empty (nothing written).
--
-- (checked_mark, ahead and greater come from tokens.lua, prepended by
-- scripts.go.)
local token, id = ARGV[1], ARGV[3]
if not id or id == '' then
  return redis.error_reply('LOCKWATCH write id is empty')
end
local mark, err = checked_mark(KEYS[1], token)
if err then
  return redis.error_reply(err)
end
if ahead(token, ARGV[4]) then
  return {3, mark or '0'}
end
if mark and not greater(token, mark) then
  -- Marks only grow, so an equal mark beside this write's id was set by this
  -- write, and no newer token has been accepted since.
  if mark == token and redis.call('HGET', KEYS[1], 'write') == id then
    return {2, mark}
  end
  return {0, mark}
end
redis.call('HSET', KEYS[1], 'value', ARGV[2], 'fence', token, 'write', id)
return {1, mark or '0'}
