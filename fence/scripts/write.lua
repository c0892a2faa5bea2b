-- write: store a value if its fencing token is newer than every token the
-- key accepted, and make that token the key's high-water mark, in one step
-- (tokens.lua comes first). Built by writeArgs (scripts.go).
local record = KEYS[1] -- a hash: value, fence (the mark), write (its writer's id)
local token = ARGV[1]  -- the write's fence: canonical decimal, 1 to 2^63-1
local value = ARGV[2]
local id = ARGV[3]     -- not empty, one per RedisStore.Write call: its copies share it
local skew = ARGV[4]   -- the bound above TIME, in µs, for an unsigned token; '' signed

-- Returns
--   {1, mark}  written: value, fence and write replaced together. mark is
--              the previous high-water mark, '0' when the key had none.
--   {2, mark}  already written: token = mark and id = write, a copy of the
--              write that set the mark, re-sent after its reply was lost.
--   {3, mark}  ahead: token > TIME + skew; nothing written.
--   {0, mark}  stale: token <= mark, and not a copy of the write that set
--              it; nothing written. Strict: a token never writes twice.
--   an error   the stored mark or token is not canonical, or id is empty.
if not id or id == '' then
  return redis.error_reply('LOCKWATCH write id is empty')
end
local mark, err = checked_mark(record, token)
if err then
  return redis.error_reply(err)
end
if ahead(token, skew) then
  return {3, mark or '0'}
end
if mark and not greater(token, mark) then
  -- Marks only grow: an equal mark beside this write's id was set by this
  -- write, and no newer token has been accepted since.
  if mark == token and redis.call('HGET', record, 'write') == id then
    return {2, mark}
  end
  return {0, mark}
end
redis.call('HSET', record, 'value', value, 'fence', token, 'write', id)
return {1, mark or '0'}
