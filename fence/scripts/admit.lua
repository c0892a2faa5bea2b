-- admit: let a request through if its fencing token is at least the key's
-- high-water mark, and advance the mark to it, in one step (tokens.lua
-- comes first). Built by admitArgs (scripts.go).
local record = KEYS[1] -- a hash whose field fence is the mark (value, write untouched)
local token = ARGV[1]  -- the request's fence: canonical decimal, 1 to 2^63-1
local skew = ARGV[2]   -- the bound above TIME, in µs, for an unsigned token; '' signed

-- Returns
--   {1, mark}  admitted: token >= mark (equal is admitted: one lease may
--              send several requests), and token is the mark now. mark is
--              the previous one, '0' when the key had none.
--   {0, mark}  stale: token < mark; the mark is unchanged.
--   {3, mark}  ahead: token > TIME + skew; the mark is unchanged.
--   an error   the stored mark or token is not canonical (nothing written).
local mark, err = checked_mark(record, token)
if err then
  return redis.error_reply(err)
end
if ahead(token, skew) then
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
redis.call('HSET', record, 'fence', token)
return {1, mark or '0'}
