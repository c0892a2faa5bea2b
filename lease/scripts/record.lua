-- record: the functions every script that reads or writes a key's fence
-- record shares. lockwatch puts this file in front of acquire.lua and
-- release.lua; it returns nothing itself.
--
-- A fence record is "<fence>", or "<fence>/<owner>/<owner>..." with the
-- owner tokens of the attempts that have ended (barred), newest first, at
-- most 16; "/<owner>..." when no fence was ever minted under it. <fence> is
-- a decimal integer without leading zeros, below 2^53 (exact in a Lua
-- double, in JSON and in JavaScript).

-- The largest fence ever minted, 2^53 - 1: a larger record could not be
-- incremented exactly, and fences would repeat.
local FENCE_MAX = 9007199254740991

-- parse returns the record's fence (nil when it holds none) and its barred
-- list ('' or '/<owner>...'), or nil, nil for a record that lockwatch
-- cannot have written: hex, exponents, 'inf', leading zeros, values at or
-- above 2^53. Lua's tonumber accepts all of these, so it is never used on
-- the record directly.
local function parse(rec)
  if not rec then
    return nil, ''
  end
  local digits, barred = string.match(rec, '^(%d*)(.*)$')
  if barred ~= '' and string.sub(barred, 1, 1) ~= '/' then
    return nil, nil
  end
  if digits == '' then
    return nil, barred
  end
  if #digits > 16 or (#digits > 1 and string.sub(digits, 1, 1) == '0') then
    return nil, nil
  end
  local fence = tonumber(digits)
  if fence > FENCE_MAX then
    return nil, nil
  end
  return fence, barred
end

-- bar returns the list with owner put first (and only once), keeping at
-- most 16 tokens.
local function bar(barred, owner)
  local list, n = '/' .. owner, 1
  for token in string.gmatch(barred, '/([^/]+)') do
    if n == 16 then
      break
    end
    if token ~= owner then
      list, n = list .. '/' .. token, n + 1
    end
  end
  return list
end

-- isBarred tells whether owner is on the list.
local function isBarred(barred, owner)
  return barred ~= '' and string.find(barred .. '/', '/' .. owner .. '/', 1, true) ~= nil
end

-- barOwner bars owner on the record of KEYS[2] (fence kept as it is, a
-- record lockwatch cannot read left alone) and restarts its retention.
local function barOwner(owner, retention)
  local rec = redis.call('GET', KEYS[2])
  local fence, barred = parse(rec)
  if not barred then
    return
  end
  local digits = ''
  if fence then
    digits = string.format('%d', fence)
  end
  redis.call('SET', KEYS[2], digits .. bar(barred, owner), 'PX', retention)
end
