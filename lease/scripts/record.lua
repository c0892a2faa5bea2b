-- record: the functions every script that reads or writes a key's fence
-- record shares. lockwatch puts this file in front of acquire.lua and
-- release.lua; it returns nothing itself.
--
-- A fence record is "<fence>" followed by two lists of barred owner
-- tokens, each newest first and at most 16 long: "/<owner>" for each
-- attempt that ended (a released lease, a cleaned-up unknown acquire),
-- then "~<owner>" for each attempt answered "contended". The lists are
-- kept apart because contended answers are frequent (every poll of a
-- waiter) and would otherwise push a release's bar out within
-- milliseconds. <fence> is a decimal integer without leading zeros below
-- 2^53 (exact in a Lua double, in JSON and in JavaScript), or empty when no
-- fence was ever minted under the record.

-- The largest fence ever minted, 2^53 - 1: a larger record could not be
-- incremented exactly, and fences would repeat.
local FENCE_MAX = 9007199254740991
local BARS = 16

-- parse returns the record's fence (nil when it holds none) and its two
-- lists, or nil, nil, nil for a record that lockwatch cannot have written:
-- hex, exponents, 'inf', leading zeros, values at or above 2^53. Lua's
-- tonumber accepts all of these, so it is never used on the record as it
-- is.
local function parse(rec)
  if not rec then
    return nil, '', ''
  end
  local digits, ended, contended = string.match(rec, '^(%d*)([^~]*)(.*)$')
  if (ended ~= '' and string.sub(ended, 1, 1) ~= '/') or (contended ~= '' and string.sub(contended, 1, 1) ~= '~') then
    return nil, nil, nil
  end
  if digits == '' then
    return nil, ended, contended
  end
  if #digits > 16 or (#digits > 1 and string.sub(digits, 1, 1) == '0') then
    return nil, nil, nil
  end
  local fence = tonumber(digits)
  if fence > FENCE_MAX then
    return nil, nil, nil
  end
  return fence, ended, contended
end

-- push returns list (tokens each behind sep) with owner put first, once,
-- and at most BARS tokens.
local function push(list, sep, owner)
  local out, n = sep .. owner, 1
  for token in string.gmatch(list, sep .. '([^' .. sep .. ']+)') do
    if n == BARS then
      break
    end
    if token ~= owner then
      out, n = out .. sep .. token, n + 1
    end
  end
  return out
end

-- isBarred tells whether owner is on either list.
local function isBarred(ended, contended, owner)
  return string.find(ended .. '/', '/' .. owner .. '/', 1, true) ~= nil
    or string.find(contended .. '~', '~' .. owner .. '~', 1, true) ~= nil
end

-- barOwner bars owner on the record of KEYS[2], on the ended list or, with
-- contended set, the contended one. The fence is kept as it is, a record
-- lockwatch cannot read is left alone, and the record's expiry is never
-- brought forward (another Locker may keep it for longer). A bar is a
-- precaution, not the answer: where Redis refuses the write (maxmemory
-- reached under noeviction), the script answers all the same.
local function barOwner(owner, retention, contended)
  local fence, ended, cont = parse(redis.call('GET', KEYS[2]))
  if not ended then
    return
  end
  if contended then
    cont = push(cont, '~', owner)
  else
    ended = push(ended, '/', owner)
  end
  local digits = ''
  if fence then
    digits = string.format('%d', fence)
  end
  local px = math.max(tonumber(retention), redis.call('PTTL', KEYS[2]))
  redis.pcall('SET', KEYS[2], digits .. ended .. cont, 'PX', px)
end
