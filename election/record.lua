-- record.lua: write an election's leader record unless a later term's is
-- there (a deposed leader's late write must not hide its successor).
-- KEYS[1] the record; ARGV[1] the term's fence, ARGV[2] "<fence>
-- <identity>", ARGV[3] its expiry in ms. Returns 1 if written, else 0.
local cur = redis.call('GET', KEYS[1])
if cur then
  local held = tonumber(string.match(cur, '^(%d+) '))
  if held and held > tonumber(ARGV[1]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
