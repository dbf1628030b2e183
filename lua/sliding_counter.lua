#!lua
-- sluice: sliding-window counter of N sub-windows, client-side acquire.
-- Contract: lua/README.md.
--
-- KEYS[1] counter  hash: "<index>" = requests admitted in sub-window index
--                        (floor(ms / sub_ms)), t = latest ms an admission was made at
-- KEYS[2] registry set of paths that have state (walked by the daemon)
-- ARGV[1] path (registry member), ARGV[2] limit (integer >= 1),
-- ARGV[3] window_ms (integer >= 1), ARGV[4] sub_windows N (integer >= 1 that
-- divides window_ms), ARGV[5] now (ms; absent or "" = Redis TIME)
-- Reply {allowed 0|1, remaining, retry_after_ms, reset_ms}
--
-- sub_ms = window_ms / N.  At t the live sub-windows are the N indices
-- cur - N + 1 .. cur (cur = floor(t / sub_ms)): a request admitted in
-- sub-window j counts until (j + N) * sub_ms, i.e. for between
-- window_ms - sub_ms and window_ms.  Admitted if their sum < limit.  Fields of
-- other indices are expired (or were written under another sub_ms) and are
-- removed on the way by an admission, as sliding_log.lua removes old entries.
--
-- Time mark (DESIGN.md, "Time"): t, the time the latest admission was served
-- at.  A call is served at max(now, t).  A rejected call writes nothing (no
-- field removed, no TTL extended): what has left the window at its time may
-- still count for a later call served before it (a client with a lagging
-- clock, at the mark).  The TTL keeps the mark SKEW_MS past the window's end.

--@include lib/subwindows.lua

if #KEYS ~= 2 then return usage('sliding_counter takes 2 KEYS (counter, registry)') end
local counter, registry = KEYS[1], KEYS[2]
local path, err = arg_path(ARGV[1])
if err then return err end
local limit, window, subs, sub, now
limit, window, subs, sub, now, err = arg_counter_now(ARGV, 2)
if err then return err end

-- Stored time never moves backward: a caller behind the latest admission is
-- served at that admission's time.
local h, t, cur = subs_read(counter, now, sub)
local live, sum, cur_count, stale = subs_scan(h, cur, subs)

local allowed, retry_after = 0, 0
if sum < limit then
  allowed = 1
  -- t becomes the mark: what has left the window at t has left it for
  -- every later call.
  hdel_all(counter, stale)
  redis.call('HSET', counter, fmt_int(cur), fmt_int(cur_count + 1), 't', fmt_int(t))
  sum = sum + 1
  if cur_count == 0 then live[#live + 1] = { cur, 1 } end
  -- The newest sub-window (cur) leaves the window at (cur + N) * sub_ms, and
  -- the mark is kept SKEW_MS more; measured from the caller's now.
  expire_in(counter, (cur + subs) * sub + SKEW_MS - now)
  redis.call('SADD', registry, path)
else
  -- Admitted once sum < limit: when the oldest sub-windows holding at least
  -- sum - limit + 1 requests have left the window (sub-window j leaves at
  -- (j + N) * sub_ms).
  table.sort(live, function(a, b) return a[1] < b[1] end)
  local need, acc = sum - limit + 1, 0
  for _, e in ipairs(live) do
    acc = acc + e[2]
    if acc >= need then
      retry_after = math.max(1, (e[1] + subs) * sub - t)
      break
    end
  end
end

return { allowed, math.max(0, limit - sum), retry_after, subs_reset_ms(live, subs, sub, t) }
