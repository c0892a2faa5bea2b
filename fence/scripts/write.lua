-- write: store a value if its fencing token is newer than every token the key
-- accepted, and make that token the key's high-water mark, in one step.
--
-- KEYS[1]  fence record: a hash with fields value (the data) and fence (the
--          high-water mark, canonical decimal)
-- ARGV[1]  token of the write: canonical decimal, 1 to 2^63-1 (no sign, no
--          leading zeros)
-- ARGV[2]  value
--
-- Returns
--   {1, mark}  written: value and fence replaced together. mark is the previous
--              high-water mark, '0' when the key had none.
--   {0, mark}  stale: ARGV[1] <= mark; nothing written. Strict: a token the key
--              already accepted is rejected, so a reused token never writes twice.
--   an error   the stored mark or ARGV[1] is not a canonical token (nothing written).
--
-- (checked_mark and greater come from tokens.lua, prepended by scripts.go.)
local token = ARGV[1]
local mark, err = checked_mark(KEYS[1], token)
if err then
  return redis.error_reply(err)
end
if mark then
  if not greater(token, mark) then
    return {0, mark}
  end
end
redis.call('HSET', KEYS[1], 'value', ARGV[2], 'fence', token)
return {1, mark or '0'}
