-- record: the functions every script that reads or writes a key's fence
-- record shares. lockwatch puts this file in front of acquire.lua,
-- renew.lua, release.lua, force.lua and inspect.lua; it returns nothing
-- itself.
--
-- A fence record is "<fence>" followed by two lists of barred owner
-- tokens, each newest first and at most 16 long. The first lists the
-- attempts that ended, each behind a mark that says how, so that a re-sent
-- command can answer what its first copy did:
--   "/<owner>"  ended without deleting the lock (it had expired, or the
--               acquire never ran)
--   "+<owner>"  its own release, or the clean-up of its unknown acquire,
--               deleted the lock
--   "!<owner>"  an administrator took the lock from it (force.lua)
-- The second lists the attempts answered "contended", each as
-- "~<owner>". The lists are kept apart because contended answers are
-- frequent (every poll of a waiter) and would otherwise push a release's
-- bar out within milliseconds. An owner is on the ended list at most once,
-- with the mark of its first end. <fence> is a decimal integer without
-- leading zeros below 2^53 (exact in a Lua double, in JSON and in
-- JavaScript), or empty when no fence was ever minted under the record.

-- Every script that writes the record reads PTTL (barOwner) or TIME
-- before a write. Replicated verbatim (Redis 5 and 6 with
-- lua-replicate-commands no), a write after such a read is refused, and a
-- bar, written with pcall, would be skipped in silence: so the scripts
-- switch to effects replication first (the default since Redis 5, the only
-- mode since 7). EFFECTS tells whether it did; acquire.lua refuses a
-- server that cannot switch.
local EFFECTS = not redis.replicate_commands or redis.replicate_commands()

-- wake tells a waiter that the lock is free: a publish on the key's
-- wake-up channel, when the wait mark (KEYS[3]) says someone waits.
local function wake()
  if redis.call('EXISTS', KEYS[3]) == 1 then
    redis.pcall('PUBLISH', string.sub(KEYS[1], 1, -2) .. 'r', '')
  end
end

-- The largest fence ever minted, 2^53 - 1: a larger record could not be
-- incremented exactly, and fences would repeat.
local FENCE_MAX = 9007199254740991
local BARS = 16

-- The marks of the ended list, and a pattern for any mark of either list.
local ENDED = {['/'] = true, ['+'] = true, ['!'] = true}
local MARK = '[/+!~]'

-- parse returns the record's fence (nil when it holds none) and its two
-- lists as one string (the ended list, then the contended one), or nil,
-- nil for a record that lockwatch cannot have written: hex, exponents,
-- 'inf', leading zeros, values at or above 2^53. Lua's tonumber accepts all
-- of these, so it is never used on the record as it is.
--
-- The functions below work on positions in the record (string.find) and
-- never split the lists into tokens: a busy key's
-- record holds up to 32 of them, and splitting and joining them again on
-- every release and every contended answer was most of what a busy key's
-- scripts cost Redis beyond a new key's.
local function parse(rec)
  if not rec then
    return nil, ''
  end
  local n = string.find(rec, '%D') or #rec + 1
  local digits, lists = string.sub(rec, 1, n - 1), string.sub(rec, n)
  local first = string.sub(lists, 1, 1)
  if first ~= '' and not ENDED[first] and first ~= '~' then
    return nil, nil
  end
  if digits == '' then
    return nil, lists
  end
  if #digits > 16 or (#digits > 1 and string.sub(digits, 1, 1) == '0') then
    return nil, nil
  end
  local fence = tonumber(digits)
  if fence > FENCE_MAX then
    return nil, nil
  end
  return fence, lists
end

-- token returns where sep .. owner starts as a whole token in s (followed
-- by a mark or the end), or nil.
local function token(s, sep, owner)
  local needle, i = sep .. owner, 1
  while true do
    i = string.find(s, needle, i, true)
    if not i then
      return nil
    end
    local after = string.sub(s, i + #needle, i + #needle)
    if after == '' or ENDED[after] or after == '~' then
      return i
    end
    i = i + 1
  end
end

-- split returns where the contended list starts in lists.
local function split(lists)
  return string.find(lists, '~', 1, true) or #lists + 1
end

-- endMark returns the mark owner ended with ('/', '+' or '!'), or nil
-- when it is not on the ended list.
local function endMark(lists, owner)
  local c = split(lists)
  for mark in pairs(ENDED) do
    local i = token(lists, mark, owner)
    if i and i < c then
      return mark
    end
  end
  return nil
end

-- isBarred tells whether owner is on either list.
local function isBarred(lists, owner)
  if lists == '' then -- a new key's record: the common case, made cheap
    return false
  end
  if endMark(lists, owner) then
    return true
  end
  local i = token(lists, '~', owner)
  return i ~= nil and i >= split(lists)
end

-- without returns list without the token mark .. owner, if it is there.
local function without(list, mark, owner)
  local i = token(list, mark, owner)
  if not i then
    return list
  end
  return string.sub(list, 1, i - 1) .. string.sub(list, i + 1 + #owner)
end

-- push returns list with mark .. owner put first and at most BARS tokens;
-- list holds tokens behind marks that pat matches, and not owner.
local function push(list, pat, mark, owner)
  local s = 1 -- where the BARS-th token starts, if there is one
  for _ = 1, BARS - 1 do
    s = string.find(list, pat, s + 1)
    if not s then
      break
    end
  end
  if s then
    list = string.sub(list, 1, s - 1)
  end
  return mark .. owner .. list
end

-- barOwner bars owner on the record of KEYS[2] with mark, first on its
-- list ('~' the contended list, else the ended one); an owner already there
-- moves to the front, and on the ended list keeps its first mark: the first
-- end is what happened. It returns the owner's mark on the ended list (nil
-- for '~'). The fence is kept as it is, a record lockwatch
-- cannot read is left alone, and the record's expiry is never brought
-- forward (another Locker may keep it for longer). A bar is a precaution,
-- not the answer: where Redis refuses the write (maxmemory reached under
-- noeviction), the script answers all the same.
local function barOwner(owner, retention, mark)
  local fence, lists = parse(redis.call('GET', KEYS[2]))
  if not lists then
    return mark
  end
  local c = split(lists)
  local ended, cont = string.sub(lists, 1, c - 1), string.sub(lists, c)
  if mark == '~' then
    cont = push(without(cont, '~', owner), '~', '~', owner)
  else
    mark = endMark(lists, owner) or mark
    ended = push(without(ended, mark, owner), '[/+!]', mark, owner)
  end
  local digits = ''
  if fence then
    digits = string.format('%d', fence)
  end
  local px = math.max(tonumber(retention), redis.call('PTTL', KEYS[2]))
  redis.pcall('SET', KEYS[2], digits .. ended .. cont, 'PX', px)
  if mark ~= '~' then
    return mark
  end
  return nil
end
