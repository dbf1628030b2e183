-- lib/batch.lua: the worker's batch scripts (drain, prune, repair, reclaim;
-- lua/README.md).  One call handles N paths: KEYS are the registry, then
-- each path's keys; ARGV are now, then each path's arguments, every one of
-- them checked before the first write.  The reply is {done, emptied, N,
-- skipped}: what the job did (entries drained, fields pruned, ...), paths
-- removed from the registry, N, and paths left alone because a key holds
-- another type (a layout mismatch must not stop the batch).
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
-- prune, the fixed window's repair; `noun` names a path in messages): N
-- and the window_ms of each, or an error reply third.
local function batch_windows(extra, noun, text)
  local n, err = batch_size(1, 2, extra, text)
  if err then return nil, nil, err end
  local windows = {}
  for i = 1, n do
    local _
    _, err = arg_path(ARGV[2 * i], noun, i)
    if err then return nil, nil, err end
    windows[i], err = arg_int(ARGV[2 * i + 1], 'window_ms', noun, i)
    if err then return nil, nil, err end
  end
  return n, windows
end

-- Takes path out of the registry (KEYS[1]): 1, or 0 when it was not in it.
local function unregister(path)
  return redis.call('SREM', KEYS[1], path)
end

-- Checks now (ARGV[1], after the caller has checked the paths' arguments),
-- then runs job(i, now) for the paths i = 1..n and sums up the reply.  job
-- returns what it did and whether the path left the registry (unregister's
-- 1 or 0), or nil when it skipped the path.
local function batch_run(n, job)
  local now, err = arg_now(ARGV[1])
  if err then return err end
  local done, emptied, skipped = 0, 0, 0
  for i = 1, n do
    local d, e = job(i, now)
    if d == nil then
      skipped = skipped + 1
    else
      done, emptied = done + d, emptied + e
    end
  end
  return { done, emptied, n, skipped }
end
