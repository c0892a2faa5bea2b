-- record: what every script that reads or writes a fence record shares;
-- scripts.go puts it in front of them. The record's format, and its
-- reference that FuzzRecord holds this file to: internal/leasekeys's
-- Record. "<fence>", then the ended list ("/", "+" or "!" before each
-- owner token), then the contended one ("~" before each), newest first.
-- These functions work on positions in the text: splitting and joining
-- the lists on every call was most of what a busy key's scripts cost.

-- The scripts read PTTL or TIME before they write, which verbatim
-- replication (Redis 5 and 6 with lua-replicate-commands no) refuses:
-- they switch to effects replication, the only mode since Redis 7, whose
-- REDIS_VERSION_NUM spares them the call. acquire.lua refuses a server
-- that cannot.
local EFFECTS = redis.REDIS_VERSION_NUM or not redis.replicate_commands or redis.replicate_commands()

-- The patterns '[/+!]' (an ended token's mark) and '[/+!~]' (any mark),
-- and the largest fence, 2^53 - 1 (above it, last + 1 is inexact), are
-- written where they are used: a local that functions share is an upvalue,
-- which each call builds anew, as it builds every closure below.
local BARS = 16

-- parse returns the record's fence (nil: none), ended list, contended
-- list and fence digits, or nothing for a text lockwatch cannot have
-- written. Only the digits and the mark after them are matched by
-- pattern: the lists are cut by plain search. Lua's tonumber takes hex,
-- exponents and 'inf': it only sees checked digits (48: a leading '0').
local function parse(rec)
  rec = rec or ''
  local e = string.match(rec, '^%d*()') -- where the lists start
  if e <= #rec and not string.find(rec, '^[/+!~]', e) then
    return nil
  end
  local c = string.find(rec, '~', e, true) or #rec + 1
  local ended, cont = string.sub(rec, e, c - 1), string.sub(rec, c)
  if e == 1 then
    return nil, ended, cont, ''
  end
  local digits = string.sub(rec, 1, e - 1)
  local fence = tonumber(digits)
  if e > 17 or (e > 2 and string.byte(rec) == 48) or fence > 2^53 - 1 then
    return nil
  end
  return fence, ended, cont, digits
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
    if string.find(mark, pat) and (after == '' or string.find(after, '[/+!~]')) then
      return i - 1, mark
    end
  end
end

local function isBarred(ended, cont, owner)
  return find(ended, '[/+!]', owner) ~= nil or find(cont, '~', owner) ~= nil
end

-- push returns list with the token mark .. owner first, without owner's
-- own (at i, as find gives it; nil: none), and at most BARS tokens.
local function push(list, i, mark, owner)
  if i then
    list = string.sub(list, 1, i - 1) .. string.sub(list, i + 1 + #owner)
  end
  -- KEEP matches a list's first BARS - 1 (15) tokens, and captures where
  -- the next starts: one anchored match, no search from each position. A
  -- literal, so that no call builds it.
  local KEEP = '^[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*[/+!~][^/+!~]*()'
  local s = string.match(list, KEEP)
  if s and s <= #list then
    list = string.sub(list, 1, s - 1)
  end
  return mark .. owner .. list
end

-- heldBy answers an owner the lock already holds: {1, fence}, or an
-- error when the record cannot give the fence.
local function heldBy(fenceKey)
  local fence = parse(redis.call('GET', fenceKey))
  if not fence then
    return redis.error_reply('LOCKWATCH fence record missing or unreadable for a held lock')
  end
  return {1, fence}
end

-- barOwner bars owner on the record at key with mark ('~' contended,
-- else an end), as Record.Bar does, and returns owner's mark on the ended
-- list (nil for '~'). A record lockwatch cannot read is left alone, and
-- its expiry is never brought forward (another Locker may keep it longer).
-- A bar is a precaution, not the answer: where Redis refuses the write
-- (maxmemory under noeviction), the script answers all the same.
local function barOwner(key, owner, retention, mark)
  local _, ended, cont, digits = parse(redis.call('GET', key))
  if not ended then
    return mark
  end
  if mark == '~' then
    cont, mark = push(cont, find(cont, '~', owner), '~', owner), nil
  else
    local i, old = find(ended, '[/+!]', owner)
    mark = old or mark
    ended = push(ended, i, mark, owner)
  end
  local px = math.max(tonumber(retention), redis.call('PTTL', key))
  redis.pcall('SET', key, digits .. ended .. cont, 'PX', px)
  return mark
end

local now -- the server's TIME, read once per script

-- refusal says why no fence can be minted on the record text rec, parsed
-- (last, ended; nil: one can): it is not one lockwatch writes, or its
-- fences are exhausted.
local function refusal(rec, last, ended)
  if not ended then
    return 'LOCKWATCH refused: the fence record is not one lockwatch writes: ' .. string.sub(rec, 1, 40)
  end
  if last and last >= 2^53 - 1 then
    return 'LOCKWATCH refused: the fences of this key are exhausted (2^53 - 1)'
  end
end

-- mint writes the record at key (parsed: last, ended, cont; refusal
-- passed) with the next fence and returns it. The fence is max(last + 1,
-- server TIME in microseconds): the TIME part keeps it increasing when
-- the record is gone (a restart without persistence) or stale (a promoted
-- replica that missed the last acquires). Microseconds since 1970 stay
-- below 2^53 until 2255.
local function mint(key, retention, last, ended, cont)
  now = now or redis.call('TIME')
  local fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
  if last and last >= fence then
    fence = last + 1
  end
  redis.call('SET', key, string.format('%d', fence) .. ended .. cont, 'PX', retention)
  return fence
end

-- The wait queue: a list of owner tokens, oldest first, and a hash of
-- their entries, "<expiry> <lease ttl> <channel>": ms on the server's
-- TIME, and the grant channel of the waiter's Locker ('': none). An entry
-- is live while its expiry is ahead; both keys expire with the longest
-- entry, and a token is in both or in neither.
--
-- queue returns its functions: handoff, enqueue, entryOf, keepEntries and
-- nowMs. A script builds them where it reaches the queue (release.lua once
-- it finds one), as each closure costs every call that builds it.
local function queue()
  local function nowMs()
    now = now or redis.call('TIME')
    return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  end

  local function entryOf(entriesKey, owner)
    local entry = redis.call('HGET', entriesKey, owner)
    local expiry, ttl, channel = string.match(entry or '', '^(%d+) (%d+) ?(.*)$')
    return entry, expiry and tonumber(expiry) > nowMs(), ttl, channel
  end

  local function keepEntries(queueKey, entriesKey, entryTTL)
    if redis.call('PTTL', entriesKey) < entryTTL then
      redis.call('PEXPIRE', queueKey, entryTTL)
      redis.call('PEXPIRE', entriesKey, entryTTL)
    end
  end

  -- enqueue puts owner at the queue's tail, live for entryTTL ms, its lease
  -- to last ttl ms once granted and its grant published on channel, and
  -- returns its place (1: the head; 0: it was queued already, and its entry
  -- is pushed back).
  local function enqueue(queueKey, entriesKey, owner, entryTTL, ttl, channel)
    local place = 0
    local entry = string.format('%d %s %s', nowMs() + entryTTL, ttl, channel)
    if redis.call('HSET', entriesKey, owner, entry) == 1 then
      place = redis.call('RPUSH', queueKey, owner)
    end
    keepEntries(queueKey, entriesKey, entryTTL)
    return place
  end

  -- handoff gives a free key to the queue's first live entry: the expired
  -- ones before it are dropped, and the live one gets the lock for its
  -- lease TTL, a fence minted as acquire.lua mints, and the grant message
  -- "<owner> <fence>" on its entry's channel (its Locker's alone). It
  -- returns the owner granted; nil when no entry is live (the key stays
  -- free); nil and the refusal when no fence can be minted (nothing
  -- written). The publish may fail (an ACL without the channel): the
  -- waiter then learns of the grant at its next refresh.
  local function handoff(lockKey, fenceKey, queueKey, entriesKey, retention)
    if redis.call('EXISTS', queueKey) == 0 then
      return nil
    end
    local rec = redis.call('GET', fenceKey)
    local last, ended, cont = parse(rec)
    local why = refusal(rec, last, ended)
    if why then
      return nil, why
    end
    while true do
      local owner = redis.call('LPOP', queueKey)
      if not owner then
        return nil
      end
      local _, live, ttl, channel = entryOf(entriesKey, owner)
      redis.call('HDEL', entriesKey, owner)
      if live then
        local fence = mint(fenceKey, retention, last, ended, cont)
        redis.call('SET', lockKey, owner, 'PX', ttl)
        if channel ~= '' then
          redis.pcall('PUBLISH', channel, owner .. ' ' .. string.format('%d', fence))
        end
        return owner
      end
    end
  end
  return handoff, enqueue, entryOf, keepEntries, nowMs
end
