-- lib/subwindows.lua: the sliding-window counter (lua/README.md, "The
-- sliding-window counter").  Units: requests, ms.
--
-- window_ms is cut into N = sub_windows sub-windows of sub_ms = window_ms / N
-- (N divides window_ms: every sub-window has the same whole ms).  A counter
-- hash holds "<j>" = requests admitted in sub-window j, which covers
-- [j * sub_ms, (j + 1) * sub_ms), and, under names that start with a letter
-- (so no index field can take them), t = the ms the latest admission was
-- served at (the time mark) and the parameters applied: limit, window_ms,
-- sub_windows, rule.  At t, with cur = floor(t / sub_ms), the live
-- sub-windows are cur - N + 1 .. cur; fields of any other index are expired
-- (or were written under another sub_ms) and are removed: Redis 7.0 has no
-- per-field TTL.
--@include lib/window.lua

-- sub_windows (an integer >= 1 that divides window): N and sub_ms, or an
-- error reply third.
local function arg_subs(s, window, noun, i)
  local subs = int_arg(s, 1)
  if not subs or window % subs ~= 0 then
    return nil, nil, fail('sub_windows', 'an integer from 1 to 2^53-1 that divides window_ms' .. item(noun, i))
  end
  return subs, window / subs
end

-- The index a field name stands for (written as fmt_int writes it), or nil.
local function index_of(f)
  local v = int_arg(f, 0)
  if v and fmt_int(v) == f then return v end
  return nil
end

-- The counter's HGETALL h, split in one pass: its named fields (those whose
-- name does not start with a digit: t, limit, window_ms, sub_windows, rule),
-- a table by name of the stored strings; and its sub-window fields, a flat
-- list of name, index, count (a count that is not a whole number reads 0).
-- A field that starts with a digit but is no index as fmt_int writes one
-- ("007", written by hand) is in neither, and left alone.
local function subs_fields(h)
  local named, subf, j = {}, {}, 0
  for i = 1, #h, 2 do
    local f = h[i]
    local b = string.byte(f, 1)
    if b and b >= 48 and b <= 57 then
      local idx = index_of(f)
      if idx then
        subf[j + 1], subf[j + 2], subf[j + 3] = f, idx, stored_int(h[i + 1]) or 0
        j = j + 3
      end
    else
      named[f] = h[i + 1]
    end
  end
  return named, subf
end

-- The sub-window fields subf (subs_fields) at cur, with N = subs: the sum of
-- the live ones (cur - N < index <= cur), the count of cur, the oldest live
-- index that holds requests (nil when none does), and the names of the
-- fields to remove (index <= cur - N, or > cur: written under another
-- sub_ms), nil when there are none.
local function subs_live(subf, cur, subs)
  local sum, cur_count, oldest, stale = 0, 0, nil, nil
  local low = cur - subs
  for j = 1, #subf, 3 do
    local idx = subf[j + 1]
    if idx <= low or idx > cur then
      if stale then stale[#stale + 1] = subf[j] else stale = { subf[j] } end
    else
      local c = subf[j + 2]
      if c > 0 then
        sum = sum + c
        if not oldest or idx < oldest then oldest = idx end
      end
      if idx == cur then cur_count = c end
    end
  end
  return sum, cur_count, oldest, stale
end

-- The live sub-window whose leaving brings the oldest live ones' requests to
-- `need` (>= 1, at most their sum): after it has left the window, at
-- (index + N) * sub_ms, `need` fewer requests count.
local function subs_leaving(subf, cur, subs, need)
  local live = {}
  for j = 1, #subf, 3 do
    local idx = subf[j + 1]
    if idx > cur - subs and idx <= cur and subf[j + 2] > 0 then live[#live + 1] = j end
  end
  table.sort(live, function(a, b) return subf[a + 1] < subf[b + 1] end)
  local acc = 0
  for _, j in ipairs(live) do
    acc = acc + subf[j + 2]
    if acc >= need then return subf[j + 1] end
  end
  return nil
end

-- reset_ms: ms from t until the oldest live sub-window (index `oldest`,
-- nil when none holds requests) leaves the window, 0 when there is none.
local function subs_reset_ms(oldest, subs, sub, t)
  if not oldest then return 0 end
  return math.max(0, (oldest + subs) * sub - t)
end

-- HDEL fields of key, in slices: unpack() is limited to a few thousand values.
local function hdel_all(key, fields)
  for s = 1, #fields, 1000 do
    redis.call('HDEL', key, unpack(fields, s, math.min(s + 999, #fields)))
  end
end
