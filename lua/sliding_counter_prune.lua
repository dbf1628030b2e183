#!lua flags=allow-oom
-- sluice: sliding-window counter prune, one call for a batch of counters (the
-- worker's job for FOREIGN layouts: keys and registry set as another limiter
-- keeps them, the window from the rule that matches each path; sluice's own
-- layout is pruned by sliding_counter_prune_shard.lua).  Contract: lua/README.md.
--
-- KEYS[1] registry set of paths; KEYS[1+i] counter_i hash, i = 1..N
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[3i-1] path_i (registry member), ARGV[3i] window_ms_i (integer >= 1),
--   ARGV[3i+1] sub_windows_i (integer >= 1 that divides window_ms_i)
-- Reply {pruned (sub-window fields removed), emptied (paths removed from the
--        registry), counters (N), skipped (keys of another type: untouched),
--        then, only when some failed: failed (counters refused alone: arguments the script does not take, or
--        a job error; lib/batch.lua), the first failed path, its error}
--
-- Redis 7.0 has no per-field TTL, so sub-windows that left the window stay in
-- the hash until someone removes them; the hash's own TTL only goes when the
-- path is idle.  This job removes, at max(t, now - SKEW_MS) (t, the hash's
-- time mark: the earliest time a call within the skew horizon is served at,
-- DESIGN.md "Time"), the fields sliding_counter.lua would remove there
-- (index <= cur - N, or > cur: written under another sub_ms), so it never
-- removes what such a call still counts.  A hash without a live sub-window
-- (count > 0) whose mark is past the horizon (t <= now - SKEW_MS; or that has
-- no t) is deleted and its path leaves the registry, as does the path of an
-- absent key: no call within the horizon would see it as anything but absent.
-- Idempotent: a second run at the same instant removes nothing.

--@include lib/batch.lua
--@include lib/subwindows.lua

local nc, err = batch_size(1, 3, 0, 'sliding_counter_prune takes KEYS registry, then one counter per path; '
  .. 'ARGV now, then path, window_ms and sub_windows per counter')
if err then return err end
-- Check the whole batch before any write: a counter whose arguments are
-- refused (a rule the script does not take) is left alone and fails alone.
local subs_of, sub_of, bad = {}, {}, {}
for i = 1, nc do
  local _, window, err
  _, err = arg_path(ARGV[3 * i - 1], 'counter', i)
  if not err then window, err = arg_int(ARGV[3 * i], 'window_ms', 'counter', i) end
  if not err then subs_of[i], sub_of[i], err = arg_subs(ARGV[3 * i + 1], window, 'counter', i) end
  bad[i] = err
end

return batch_run(nc, function(i, now)
  local counter, path, subs, sub = KEYS[1 + i], ARGV[3 * i - 1], subs_of[i], sub_of[i]
  local h = redis.pcall('HGETALL', counter)
  if h.err then return nil end
  if #h == 0 then return 0, unregister(path) end -- expired, reset
  local named, at = subs_fields(h)
  local mark = subs_mark(named)
  local _, _, oldest, stale = subs_live(h, at, window_index(horizon_time(mark, now), sub), subs)
  if oldest or (mark and mark > now - SKEW_MS) then
    if not stale then return 0, 0 end
    hdel_all(counter, stale)
    return #stale, 0
  end
  redis.call('DEL', counter)
  return #at, unregister(path)
end, bad, function(i) return ARGV[3 * i - 1] end)
