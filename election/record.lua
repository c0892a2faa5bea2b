-- record.lua: write an election's leader record unless a later term's is
-- there (a deposed leader's late write must not hide its successor).
-- KEYS[1] the record; ARGV[1] the term's fence, ARGV[2] the identity,
-- ARGV[3] the record's expiry in ms, ARGV[4] how long from now the term is
-- known valid, in ms (0: it ends now). The record is "<fence> <until>
-- <identity>", until in ms on the server's clock. Returns {written 1 or
-- 0, the ms from the previous term's until to now, or -1 when the record
-- held no earlier term}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fence = tonumber(ARGV[1])
local gap = -1
local cur = redis.call('GET', KEYS[1])
if cur then
  local held, till = string.match(cur, '^(%d+) (%d+) ')
  held = tonumber(held)
  if held and held > fence then
    return {0, -1}
  end
  if held and held < fence then
    gap = math.max(0, now - tonumber(till))
  end
end
local value = string.format('%s %.0f %s', ARGV[1], now + tonumber(ARGV[4]), ARGV[2])
redis.call('SET', KEYS[1], value, 'PX', ARGV[3])
return {1, gap}
