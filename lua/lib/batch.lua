-- lib/batch.lua: the worker's batch scripts (drain, prune, repair, reclaim;
-- lua/README.md).  One call handles N paths: KEYS are the registry, then
-- each path's keys; ARGV are now, then each path's arguments, every one of
-- them checked before the first write.  A path whose arguments are refused
-- (a rule the script does not take), or whose job raises an error, fails
-- alone: the other paths of the batch are maintained all the same.  The
-- reply is {done, emptied, N, skipped}: what the job did (entries drained,
-- fields pruned, ...), paths removed from the registry, N, and paths left
-- alone because a key holds another type (a layout mismatch must not stop
-- the batch); when paths failed, then also their count, the first one's
-- path and its error.  Only a call of
-- the wrong shape, or a bad now, is refused whole.
--@include lib/time.lua

-- N, or nil and usage(text) when the counts do not fit: KEYS = registry +
-- keys_per per path, ARGV = now + argv_per per path + up to `extra`
-- optional ones (an empty batch may leave out now as well).
local function batch_size(keys_per, argv_per, extra, text)
  local n = (#KEYS - 1) / keys_per
  if #KEYS < 1 or n ~= math.floor(n) then return nil, usage(text) end
  if n == 0 and #ARGV == 0 then return 0 end
  local rest = #ARGV - (argv_per * n + 1)
  if rest < 0 or rest > extra then return nil, usage(text) end
  return n
end

-- A batch whose ARGV per path are path and window_ms (the sliding log's
-- prune, the fixed window's repair; `noun` names a path in messages): N,
-- the window_ms of each and the refused ones (bad[i], an error reply, for
-- batch_run), or an error reply fourth when the call's shape is wrong.
local function batch_windows(extra, noun, text)
  local n, err = batch_size(1, 2, extra, text)
  if err then return nil, nil, nil, err end
  local windows, bad = {}, {}
  for i = 1, n do
    local _
    _, err = arg_path(ARGV[2 * i], noun, i)
    if not err then windows[i], err = arg_int(ARGV[2 * i + 1], 'window_ms', noun, i) end
    bad[i] = err
  end
  return n, windows, bad
end

-- Takes path out of the registry (KEYS[1]): 1, or 0 when it was not in it.
local function unregister(path)
  return redis.call('SREM', KEYS[1], path)
end

-- Checks now (ARGV[1], after the caller has checked the paths' arguments),
-- then runs job(i, now) for the paths i = 1..n and sums up the reply.  job
-- returns what it did and whether the path left the registry (unregister's
-- 1 or 0), or nil when it skipped the path.  bad[i] (optional) is the error
-- reply that refused path i's arguments: its job is not run.  A job that
-- raises an error fails its path alone (what it wrote before stays);
-- path_of(i) names path i in the reply.
local function batch_run(n, job, bad, path_of)
  local now, err = arg_now(ARGV[1])
  if err then return err end
  local done, emptied, skipped, failed = 0, 0, 0, 0
  local first_path, first_err
  for i = 1, n do
    local ok, d, e
    if bad and bad[i] then
      ok, d = false, bad[i]
    else
      ok, d, e = pcall(job, i, now)
      if ok and d ~= nil and (type(d) ~= 'number' or type(e) ~= 'number') then ok, d = false, 'no count' end
    end
    if not ok then
      failed = failed + 1
      if failed == 1 then
        if type(d) == 'table' then d = d.err end
        first_path, first_err = path_of(i), tostring(d)
      end
    elseif d == nil then
      skipped = skipped + 1
    else
      done, emptied = done + d, emptied + e
    end
  end
  if failed > 0 then return { done, emptied, n, skipped, failed, first_path, first_err } end
  return { done, emptied, n, skipped }
end
