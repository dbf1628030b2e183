#!lua flags=allow-oom
-- sluice: sliding-window counter prune of one shard's due counters (the
-- worker's job for sluice's own layout).  Contract: lua/README.md.
--
-- KEYS[1] <prefix>{k}:registry:sliding_counter, the shard's due index
-- ARGV[1] now (ms; "" = Redis TIME), ARGV[2] limit (counters per call)
-- Reply {pruned (sub-window fields removed), removed (paths that left the
--        registry), visited, skipped, next_due (ms, -1: registry empty), backlog}
--
-- Each due path's counter <prefix>{k}:sliding_counter:<path> is in the
-- registry's slot (same hash tag), so the script names it from the registry
-- key and the path; the meta name is never used (the counter keeps its
-- bookkeeping in its own hash).  Redis 7.0 has no per-field TTL, so
-- sub-windows that left the window stay in the hash until someone removes
-- them; the hash's own TTL only goes when the path is idle.
--
-- The prune goes by the window_ms and sub_windows the hash RECORDS (the ones
-- the client applied: DESIGN.md, "State describes itself"), at
-- max(t, now - SKEW_MS) (t, the hash's time mark: the earliest time a call
-- within the skew horizon is served at, lib/window.lua horizon_time): it
-- removes the fields sliding_counter.lua would remove there (index <= cur -
-- N, or > cur: written under another sub_ms), so it never removes what such
-- a call still counts.  A hash left without a live sub-window (count > 0)
-- whose mark is past the horizon (t <= now - SKEW_MS; or that has no t) is
-- deleted and its path leaves the registry, as does the path of an absent
-- key: no call within the horizon would see it as anything but absent.
-- Otherwise the path is due again when its oldest live sub-window has left
-- the window at the horizon, (j + N) * sub_ms + SKEW_MS (a hash with only
-- its mark left: when the mark passes the horizon).  A hash that records no
-- usable window_ms / sub_windows (not of sliding_counter.lua's making) is
-- left alone and looked at again when its key would expire.  Idempotent: a
-- second run at the same instant removes nothing.

--@include lib/subwindows.lua
--@include lib/due.lua

return due_run('sliding_counter', function(path, counter, meta, now)
  local h = redis.pcall('HGETALL', counter)
  if h.err then return nil, nil, true end
  if #h == 0 then return 0, nil end -- expired, reset
  local named, at = subs_fields(h)
  local window = int_arg(named.window_ms, 1)
  local subs = window and int_arg(named.sub_windows, 1)
  if not subs or window % subs ~= 0 then
    return due_by_ttl(counter, nil, now)
  end
  local sub = window / subs
  local mark = subs_mark(named)
  local _, _, oldest, stale = subs_live(h, at, window_index(horizon_time(mark, now), sub), subs)
  if not oldest and (not mark or mark <= now - SKEW_MS) then
    redis.call('DEL', counter)
    return #at, nil
  end
  if stale then hdel_all(counter, stale) end
  local nxt
  if not oldest then
    nxt = mark + SKEW_MS
  elseif mark then
    nxt = (oldest + subs) * sub + SKEW_MS
  else
    nxt = (oldest + subs) * sub -- no mark: pruned at now
  end
  return stale and #stale or 0, nxt
end)
