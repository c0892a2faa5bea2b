-- record: what every script that reads or writes a fence record shares;
-- scripts.go puts it in front of them. The record's format, and its
-- reference that FuzzRecord holds this file to: internal/leasekeys's
-- Record. "<fence>", then the ended list ("/", "+" or "!" before each
-- owner token), then the contended one ("~" before each), newest first.
-- These functions work on positions in the text: splitting and joining
-- the lists on every call was most of what a busy key's scripts cost.

-- The scripts read PTTL or TIME before they write, which verbatim
-- replication (Redis 5 and 6 with lua-replicate-commands no) refuses:
-- they switch to effects replication (the only mode since Redis 7).
-- acquire.lua refuses a server that cannot.
local EFFECTS = not redis.replicate_commands or redis.replicate_commands()

local FENCE_MAX = 9007199254740991 -- 2^53 - 1: above it, last + 1 is inexact
local BARS = 16
local MARK = '[/+!~]'
local ENDED = '[/+!]'

-- parse returns the record's fence (nil: none), ended list and contended
-- list, or nothing for a text lockwatch cannot have written. Lua's
-- tonumber takes hex, exponents and 'inf': it only sees checked digits.
local function parse(rec)
  local digits, lists = string.match(rec or '', '^(%d*)(.*)$')
  if lists ~= '' and not string.find(lists, '^' .. MARK) then
    return nil
  end
  local c = string.find(lists, '~', 1, true) or #lists + 1
  local ended, cont = string.sub(lists, 1, c - 1), string.sub(lists, c)
  if digits == '' then
    return nil, ended, cont
  end
  if #digits > 16 or (#digits > 1 and string.sub(digits, 1, 1) == '0') or tonumber(digits) > FENCE_MAX then
    return nil
  end
  return tonumber(digits), ended, cont
end

-- find returns where owner's token starts in list, and its mark, when
-- pat matches the mark; a token ends at the next mark.
local function find(list, pat, owner)
  local i = 1
  while true do
    if i >= #list then
      return nil -- the demo's embedded Redis errs on an init past the end
    end
    i = string.find(list, owner, i + 1, true)
    if not i then
      return nil
    end
    local mark, after = string.sub(list, i - 1, i - 1), string.sub(list, i + #owner, i + #owner)
    if string.find(mark, pat) and (after == '' or string.find(after, MARK)) then
      return i - 1, mark
    end
  end
end

local function endMark(ended, owner)
  local _, mark = find(ended, ENDED, owner)
  return mark
end

local function isBarred(ended, cont, owner)
  return find(ended, ENDED, owner) ~= nil or find(cont, '~', owner) ~= nil
end

-- push returns list with the token mark .. owner first, without owner's
-- own, and at most BARS tokens.
local function push(list, pat, mark, owner)
  local i = find(list, pat, owner)
  if i then
    list = string.sub(list, 1, i - 1) .. string.sub(list, i + 1 + #owner)
  end
  local s = 1 -- where the BARS-th token starts, if there is one
  for _ = 1, BARS - 1 do
    s = string.find(list, MARK, s + 1)
    if not s then
      return mark .. owner .. list
    end
  end
  return mark .. owner .. string.sub(list, 1, s - 1)
end

-- barOwner bars owner on the record at key with mark ('~' contended,
-- else an end), as Record.Bar does, and returns owner's mark on the ended
-- list (nil for '~'). A record lockwatch cannot read is left alone, and
-- its expiry is never brought forward (another Locker may keep it longer).
-- A bar is a precaution, not the answer: where Redis refuses the write
-- (maxmemory under noeviction), the script answers all the same.
local function barOwner(key, owner, retention, mark)
  local fence, ended, cont = parse(redis.call('GET', key))
  if not ended then
    return mark
  end
  if mark == '~' then
    cont, mark = push(cont, '~', '~', owner), nil
  else
    mark = endMark(ended, owner) or mark
    ended = push(ended, ENDED, mark, owner)
  end
  local px = math.max(tonumber(retention), redis.call('PTTL', key))
  redis.pcall('SET', key, (fence and string.format('%d', fence) or '') .. ended .. cont, 'PX', px)
  return mark
end

-- wake publishes on channel while the wait mark at key says someone waits.
local function wake(key, channel)
  if redis.call('EXISTS', key) == 1 then
    redis.pcall('PUBLISH', channel, '')
  end
end
