-- tokens: the token comparison every fence script starts with (scripts.go
-- puts it in front of write.lua, admit.lua and repair.lua).

-- The scripts read TIME before they write: replicas must get the effects,
-- not the script to run again (the default since Redis 5, the only mode
-- since 7).
if redis.replicate_commands then
  redis.replicate_commands()
end

-- Tokens are compared as strings: Lua numbers are doubles, exact only
-- below 2^53. Of two canonical decimals the longer is the larger, and
-- strings of one length compare byte by byte.
local function canonical(s)
  return #s <= 19 and string.find(s, '^[1-9][0-9]*$') ~= nil
end

local function greater(a, b)
  if #a ~= #b then
    return #a > #b
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x > y
    end
  end
  return false
end

-- checked_mark returns the key's mark (false for none), or nil and an
-- error when the token or the mark is not canonical.
local function checked_mark(key, token)
  if not canonical(token) then
    return nil, 'LOCKWATCH token is not canonical'
  end
  local mark = redis.call('HGET', key, 'fence')
  if mark and not canonical(mark) then
    return nil, 'LOCKWATCH stored fence is not canonical'
  end
  return mark
end

-- clock_plus returns this server's TIME in µs plus skew, in decimal: the
-- most a fence minted where the clock is at most skew ahead can be.
-- Doubles are exact here: TIME in µs stays below 2^53 until 2255.
local function clock_plus(skew)
  local now = redis.call('TIME')
  return string.format('%.0f', tonumber(now[1]) * 1000000 + tonumber(now[2]) + tonumber(skew))
end

-- ahead tells whether token is beyond clock_plus(skew) ('' disables the
-- bound): a fence no Locker can have minted.
local function ahead(token, skew)
  if skew == nil or skew == '' then
    return false
  end
  return greater(token, clock_plus(skew))
end
