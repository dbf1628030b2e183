-- lib/due.lua: the due index (DESIGN.md, "State model (key layout 2)",
-- "Due index"): one sorted set per shard and algorithm,
-- <prefix>{k}:registry:<algorithm>, member = path, score = the ms at which
-- the path next needs the worker.
--
-- Clients add a path with ZADD LT: a new path gets its first due time, and
-- one already there keeps the earlier of the two (so a call whose state needs
-- the worker sooner, a shorter window say, moves it earlier; a later one
-- changes nothing).  The worker's job for a shard (see below) takes what is due
-- by now, handles each path, then sets its next due time or removes
-- it when its state is gone.  A due time that comes early costs one visit and
-- a reschedule; one that came late would only delay memory being freed: no
-- decision of any client depends on the worker having run.
--@include lib/time.lua
--@include lib/skew.lua

-- A registry member this long overdue (ms) has been missed by every daemon,
-- or none runs; a client call that registers a new path removes a few such
-- members whose keys are gone.
local DEAD_AFTER_MS = 60000
local DEAD_PER_CALL = 2

-- A path whose keys hold another type (or records nothing usable, without a
-- TTL) is looked at again this much later (ms).
local SKIPPED_RETRY_MS = 60000

-- ZADD/ZREM take at most this many members per call (unpack's limits).
local DUE_SLICE = 500

-- Register path in registry (KEYS[3] of a client script) as due at `due`
-- ms: by default at its earlier due time if it has one (ZADD LT); with
-- `any` true, at `due`, earlier or later than it was (plain ZADD: for an
-- algorithm whose next due time follows from the state the call just wrote
-- alone, the token bucket's, when it will have been full for the skew
-- horizon, so the worker never visits a path in use before it has work).
-- nil, or the error reply naming KEYS[3] when the key holds another type:
-- the client scripts register before any other write, so that such a
-- registry refuses the call whole (nothing written).
--
-- A path new there drops up to DEAD_PER_CALL members overdue by
-- DEAD_AFTER_MS at now whose state and meta (keys of `base`, the shard's
-- "<prefix>{k}", and algorithm `alg`) are both gone, so the registry stays
-- bounded by the paths that have state even with no daemon running (every
-- new member removes up to two dead ones).  One function, not three: Lua
-- defines every top-level local function of a script anew at each call.
local function due_register(registry, path, due, now, base, alg, any)
  local r
  if any then
    r = redis.pcall('ZADD', registry, fmt_int(due), path)
  else
    r = redis.pcall('ZADD', registry, 'LT', fmt_int(due), path)
  end
  if type(r) == 'table' and r.err then
    return redis.error_reply('ERR sluice: KEYS[3] (the shard\'s due index) must be a sorted set: ' .. r.err)
  end
  if r ~= 1 then return nil end
  local dead = redis.call('ZRANGE', registry, '-inf', fmt_int(now - DEAD_AFTER_MS), 'BYSCORE',
    'LIMIT', '0', fmt_int(DEAD_PER_CALL))
  for _, p in ipairs(dead) do
    if redis.call('EXISTS', base .. ':' .. alg .. ':' .. p, base .. ':' .. alg .. '_meta:' .. p) == 0 then
      redis.call('ZREM', registry, p)
    end
  end
end

-- The reply of a redis.pcall in a shard job, or nil when it failed (a key of
-- another type): the job then skips the path.
local function due_ok(r)
  if type(r) == 'table' and r.err then return nil end
  return r
end

-- For a shard job's path whose state records no usable parameters (not of
-- the client script's making): what due_run's job returns.  Gone (leaves the
-- registry) when `key` is, and `key2` (optional) too; else looked at again
-- when the first that exists would expire (PTTL + 1 ms), or in
-- SKIPPED_RETRY_MS when it has no TTL; nil, nil, true (skipped) when the
-- PTTL fails (it works on a key of any type).
local function due_by_ttl(key, key2, now)
  local ttl = redis.pcall('PTTL', key)
  if ttl == -2 and key2 then ttl = redis.pcall('PTTL', key2) end
  if type(ttl) ~= 'number' then return nil, nil, true end
  if ttl == -2 then return 0, nil end
  if ttl == -1 then return 0, now + SKIPPED_RETRY_MS end
  return 0, now + ttl + 1
end

-- The text of an error a pcall caught: a redis.call's (a string, or a
-- table with err in some Redis versions) or Lua's own.
local function due_error_text(e)
  if type(e) == 'table' then e = e.err end
  return tostring(e)
end

-- Send `cmd` (a table starting with the command, key and options) with
-- the items of `list` appended, in slices of DUE_SLICE.
local function due_sliced(cmd, list, per)
  local args, head = {}, #cmd
  for i = 1, head do args[i] = cmd[i] end
  for i = 1, #list do
    args[#args + 1] = list[i]
    if #args - head >= DUE_SLICE * per or i == #list then
      redis.call(unpack(args))
      for j = #args, head + 1, -1 do args[j] = nil end
    end
  end
end

-- The worker's job over one shard's due index, for the *_shard scripts:
--   KEYS[1] <prefix>{k}:registry:<alg> (the shard's other keys, its paths'
--           state and meta and its rules copy, share its hash tag)
--   ARGV[1] now (ms; "" = Redis TIME), ARGV[2] limit (paths per call, >= 1)
-- and, from a daemon that shares the shards with others (DESIGN.md,
-- "Several daemons"), the fence:
--   KEYS[2] <prefix>{k}:lease, ARGV[3] the caller's lease, "<id>:<token>"
-- A call whose lease key does not hold exactly that string changes
-- nothing and answers an error reply "LEASE sluice: ..." naming the key
-- and its holder: a daemon that was paused or cut off, and whose lease
-- another daemon took meanwhile, cannot act on the shard, even with a call
-- it sent before it knew.
-- job(path, state_key, meta_key, t) handles one due path at now t and
-- returns what it did (entries drained, fields pruned, ...) and its next
-- due time in ms (nil: the path leaves the registry), or nil, nil, true
-- when it left the path alone (a key of another type: looked at again in
-- SKIPPED_RETRY_MS).  A job that raises an error (a redis.call refused, a
-- state no check foresaw) fails that path alone: the others are handled
-- all the same, the path is looked at again in SKIPPED_RETRY_MS (what it
-- wrote before the error stays), and the reply counts it and names the
-- first.  A next due time that is not a number below 2^53 (a state holding
-- "inf", a mark far ahead) is taken as SKIPPED_RETRY_MS too, not as a score
-- that would keep the path due at every tick.
-- Reply {done, removed (paths that left the registry), visited, skipped,
--        next_due (the registry's lowest score afterwards, -1 when empty),
--        backlog (paths still due by now: more than `limit` were due),
--        and only when a path failed: failed (paths whose job raised an
--        error), the first failed path, its error (text)}.
local function due_run(alg, job)
  if not ((#KEYS == 1 and #ARGV == 2) or (#KEYS == 2 and #ARGV == 3)) then
    return usage(alg .. ' shard job takes KEYS registry (<prefix>{k}:registry:' .. alg ..
                 ') [, lease], ARGV now, limit [, owner]')
  end
  local registry, suffix = KEYS[1], ':registry:' .. alg
  local close = string.find(registry, '}', 1, true)
  if not close or not string.find(registry, '{', 1, true) or registry:sub(close + 1) ~= suffix then
    return fail('KEYS[1]', '<prefix>{k}' .. suffix)
  end
  local base = registry:sub(1, close)
  if #KEYS == 2 then
    if KEYS[2] ~= base .. ':lease' then return fail('KEYS[2]', base .. ':lease') end
    local held = redis.call('GET', KEYS[2])
    if held ~= ARGV[3] then
      return redis.error_reply('LEASE sluice: ' .. KEYS[2] .. ' is held by ' ..
                               (held and ('"' .. held .. '"') or 'nobody') .. ', not "' .. ARGV[3] .. '"')
    end
  end
  skew_load(base .. ':rules')
  local limit, err = arg_int(ARGV[2], 'limit')
  if err then return err end
  local now
  now, err = arg_now(ARGV[1])
  if err then return err end
  local due = redis.call('ZRANGE', registry, '-inf', fmt_int(now), 'BYSCORE', 'LIMIT', '0', fmt_int(limit))
  local done, skipped, failed, resched, gone = 0, 0, 0, {}, {}
  local first_path, first_err
  local state_of, meta_of = base .. ':' .. alg .. ':', base .. ':' .. alg .. '_meta:'
  for _, path in ipairs(due) do
    local ok, d, nxt, skip = pcall(job, path, state_of .. path, meta_of .. path, now)
    if not ok or (not skip and type(d) ~= 'number') then
      failed = failed + 1
      if failed == 1 then first_path, first_err = path, due_error_text(ok and 'no count' or d) end
      nxt = now + SKIPPED_RETRY_MS
    elseif skip then
      skipped = skipped + 1
      nxt = now + SKIPPED_RETRY_MS
    else
      done = done + d
    end
    if nxt and not (type(nxt) == 'number' and nxt <= MAX_INT) then nxt = now + SKIPPED_RETRY_MS end
    if nxt then
      resched[#resched + 1] = fmt_int(math.max(nxt, now + 1))
      resched[#resched + 1] = path
    else
      gone[#gone + 1] = path
    end
  end
  -- The due paths are the registry's first #due by (score, member), its
  -- ranks 0 .. #due-1 (nothing else touched the registry meanwhile): one
  -- range delete takes them all out, and the rescheduled ones go back with
  -- their new scores.  Cheaper than ZADD XX and ZREM member by member, which
  -- in a small registry (a listpack, up to 128 members) costs O(n) each.
  if #due > 0 then redis.call('ZREMRANGEBYRANK', registry, '0', fmt_int(#due - 1)) end
  due_sliced({ 'ZADD', registry }, resched, 2)
  local head = redis.call('ZRANGE', registry, '0', '0', 'WITHSCORES')
  local next_due, backlog = -1, 0
  if head[2] then next_due = tonumber(head[2]) end
  if #due >= limit and next_due ~= -1 and next_due <= now then
    backlog = redis.call('ZCOUNT', registry, '-inf', fmt_int(now))
  end
  if failed > 0 then return { done, #gone, #due, skipped, next_due, backlog, failed, first_path, first_err } end
  return { done, #gone, #due, skipped, next_due, backlog }
end
