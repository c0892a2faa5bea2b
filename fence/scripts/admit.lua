-- admit: let a request through if its fencing token is at least the key's
-- high-water mark, and advance the mark to it, in one step.
--
-- KEYS[1]  fence record: a hash whose field fence is the high-water mark
--          (canonical decimal). Fields value and write, if any, are left
--          alone.
-- ARGV[1]  fence of the request's token: canonical decimal, 1 to 2^63-1 (no
--          sign, no leading zeros)
-- ARGV[2]  the skew allowed above this server's TIME, in microseconds, for
--          an unsigned token; '' for a signed one (fence/policy.go)
--
-- Returns
--   {1, mark}  admitted: token >= mark (equal is admitted: one lease may send
--              several requests); fence is now the token. mark is the previous
--              high-water mark, '0' when the key had none.
--   {0, mark}  stale: token < mark; the mark is unchanged.
--   {3, mark}  ahead: token > TIME + ARGV[2]; the mark is unchanged.
--   an error   the stored mark or ARGV[1] is not a canonical token (nothing written).
--
-- (checked_mark, ahead and greater come from tokens.lua, prepended by
-- scripts.go.)
local token = ARGV[1]
local mark, err = checked_mark(KEYS[1], token)
if err then
  return redis.error_reply(err)
end
if ahead(token, ARGV[2]) then
  return {3, mark or '0'}
end
if mark then
  if greater(mark, token) then
    return {0, mark}
  end
  if mark == token then
    return {1, mark}
  end
end
redis.call('HSET', KEYS[1], 'fence', token)
return {1, mark or '0'}
