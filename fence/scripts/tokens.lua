-- tokens: the token comparison both fence scripts start with (scripts.go
-- puts this file in front of write.lua and admit.lua, so each is still one
-- script, run in one step).
--
-- The scripts read TIME (ahead) before they write: replicas must get the
-- effects, not the script to run again (the default since Redis 5, the only
-- mode since 7).
if redis.replicate_commands then
  redis.replicate_commands()
end
--
-- Tokens are compared as strings: Lua numbers are doubles, exact only below
-- 2^53, and two int64 tokens above that can convert to the same double. For
-- canonical decimals, the longer string is the larger number, and strings of one
-- length compare digit by digit (bytes, not the locale's collation).
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

-- checked_mark returns the key's stored mark (false when there is none), or
-- nil and an error when the token or the stored mark is not canonical.
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

-- clock_plus returns this server's TIME in microseconds plus skew (a
-- canonical decimal), as a canonical decimal: the most a fence minted on a
-- server whose clock is at most skew ahead of this one can be, since fences
-- follow Redis TIME. Doubles are exact here: TIME in microseconds stays
-- below 2^53 until 2255.
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
