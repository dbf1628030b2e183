-- lib/log.lua: the sliding-window log (lua/README.md, "The sliding log"): a
-- sorted set of admitted entries scored in ms.  An entry admitted at s
-- counts for calls served at times in [s, s + window_ms): at t, the entries
-- with score <= t - window_ms are gone.  The log's time mark is its newest
-- score: only an admission writes, at the time it was served, and it
-- removes what has left the window there, so every entry a log holds is
-- later than mark - window_ms (the window_ms that admission recorded).
--
-- Members: the entry's number in its log, 1, 2, 3, ... (one per unit of
-- cost: unique), written after a letter that says how many digits follow
-- ("a1" .. "a9", "b10" .. "b99", "c100", ...), so that Redis's order of the
-- members of one score (bytewise) is the numeric one.  Scores never
-- decrease along the numbers (an admission is served at t >= mark), and
-- entries only ever leave from the oldest end (by score: an admission, the
-- prune) or all at once (TTL, reset), so a log holds a run of consecutive
-- numbers: the live entries are the oldest live one's number to the
-- newest's, and counting them takes no ZCOUNT.
--
-- In Redis's Lua every number <-> string conversion and C call costs about
-- as much as a cheap Redis command, so the client's functions here take the
-- cut-off as text once made and parse what they must once.
--@include lib/window.lua

-- Members and scores per ZADD (unpack() is limited to a few thousand values).
local LOG_SLICE = 500

-- The number of a member, or nil when it is not one of log_add's (a log
-- written by someone else, or by hand).
local function log_seq(member)
  local d = (member:byte(1) or 0) - 96
  if d < 1 or d > 16 or #member ~= d + 1 then return nil end
  local v = tonumber(member:sub(2))
  if not v or v < 1 or v ~= math.floor(v) then return nil end
  return v
end

-- The newest entry: its score as the mark (ceil: a foreign writer may store
-- fractional ms) and its number (nil when not log_add's), or nil when the
-- log is empty or absent.
local function log_newest(log)
  local e = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')
  if not e[2] then return nil end
  return math.ceil(tonumber(e[2])), log_seq(e[1])
end

-- The entries live at the cut-off `cut` (text: score > cut), in a log whose
-- newest entry is numbered `last` (log_newest; nil: not log_add's): how
-- many, and the score of the oldest (nil when none).  One call; a log whose
-- members are not log_add's is counted by ZCOUNT.
local function log_live(log, cut, last)
  local e = redis.call('ZRANGE', log, '(' .. cut, '+inf', 'BYSCORE', 'LIMIT', '0', '1', 'WITHSCORES')
  if not e[2] then return 0, nil end
  local first = last and log_seq(e[1])
  if first and first <= last then return last - first + 1, math.ceil(tonumber(e[2])) end
  return redis.call('ZCOUNT', log, '(' .. cut, '+inf'), math.ceil(tonumber(e[2]))
end

-- The score of the live entry of rank k (0 = the oldest) at the cut-off
-- `cut` (text); that entry must exist.
local function log_rank_score(log, cut, k)
  local e = redis.call('ZRANGE', log, '(' .. cut, '+inf', 'BYSCORE', 'LIMIT', fmt_int(k), '1', 'WITHSCORES')
  return math.ceil(tonumber(e[2]))
end

-- Add n entries at score `ts` (text) after the one numbered `last` (nil:
-- the log's members are not log_add's: numbered on from its size).  ZADD NX
-- and the retry with further numbers keep them unique whatever else the log
-- holds, so n entries are always added.
local function log_add(log, ts, last, n)
  local from, todo = (last or redis.call('ZCARD', log)) + 1, n
  if n == 1 then -- the common case, without the argument table
    local d = fmt_int(from)
    todo = 1 - redis.call('ZADD', log, 'NX', ts, string.char(96 + #d) .. d)
    from = from + 1
  end
  while todo > 0 do
    local args, added, upto = { 'ZADD', log, 'NX' }, 0, from + todo - 1
    for r = from, upto do
      local d = fmt_int(r)
      args[#args + 1] = ts
      args[#args + 1] = string.char(96 + #d) .. d
      if #args >= 3 + 2 * LOG_SLICE or r == upto then
        added = added + redis.call(unpack(args))
        args = { 'ZADD', log, 'NX' }
      end
    end
    from, todo = upto + 1, todo - added
  end
end

-- An optional parameter of the state read: "" = the one the meta records
-- (`stored`; nil when none or unreadable), else it must be an integer >= 1.
-- The value (nil: unknown), or nil and the error reply.
local function log_param(s, stored_s, field)
  if s ~= '' then return arg_int(s, field) end
  local v = stored_int(stored_s)
  if v and v >= 1 then return v end
  return nil
end
