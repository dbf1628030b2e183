-- lib/contract.lua: the calling contract of the five client scripts
-- (DESIGN.md, "Client scripts: the calling contract"; lua/README.md,
-- "Calling a client script").
--
--   KEYS[1] state     <prefix>{k}:<algorithm>:<path>
--   KEYS[2] meta      <prefix>{k}:<algorithm>_meta:<path>
--   KEYS[3] registry  <prefix>{k}:registry:<algorithm>   (the shard's due index)
--   KEYS[4] rules     <prefix>{k}:rules                  (the shard's rules copy)
--   KEYS[5] stats     <prefix>{k}:stats                  (the shard's counters)
--   ARGV[1] path (any bytes, non-empty), ARGV[2] cost n ("" = 1),
--   ARGV[3] now in ms ("" = Redis TIME), ARGV[4] rule ("" = explicit
--   parameters, a rule name, or "*": lib/rule.lua),
--   ARGV[5..] the algorithm's parameters (absent or "" with a rule).
--
-- k = shard_of(path) (lib/shard.lua).  The prefix is whatever comes before
-- the first '{' of KEYS[1] (a prefix holds no brace), so every script checks
-- that the five keys are exactly the names above for that prefix, k and path:
-- string compares, cheap.  That k is the path's shard takes a CRC16 of the
-- path (some 10 us for 20 bytes): it is checked when the path has no state
-- yet (contract_shard), since a key that exists was made by a call that
-- passed the check (or by hand).
--@include lib/time.lua
--@include lib/skew.lua
--@include lib/shard.lua
--@include lib/rule.lua

-- The shard's part of every key: "<prefix>{k}" from KEYS[1], and k; or nil
-- and the error reply.  `alg` is the script's algorithm name.
local function contract_keys(alg, fields)
  if #KEYS ~= 5 then
    return nil, nil, nil, redis.error_reply('ERR sluice: ' .. alg .. ' takes 5 KEYS (state, meta, registry, rules, stats) and ARGV path, n, now, rule'
      .. ', then ' .. table.concat(fields, ', '))
  end
  local path = ARGV[1]
  if type(path) ~= 'string' or path == '' then return nil, nil, nil, fail('path', 'a non-empty string') end
  local state = KEYS[1]
  local open = string.find(state, '{', 1, true)
  local close = open and string.find(state, '}', open + 1, true)
  local tag = close and state:sub(open + 1, close - 1)
  local k = tag and tag:find('^%d+$') and tonumber(tag)
  if not k or k >= SHARD_COUNT or (#tag > 1 and tag:sub(1, 1) == '0') then
    return nil, nil, nil, fail('KEYS[1]', '<prefix>{k}:' .. alg .. ':<path> with k the shard of the path, 0 to 1023')
  end
  local base = state:sub(1, close)
  local want = { base .. ':' .. alg .. ':' .. path, base .. ':' .. alg .. '_meta:' .. path,
    base .. ':registry:' .. alg, base .. ':rules', base .. ':stats' }
  for i = 1, 5 do
    if KEYS[i] ~= want[i] then
      local form = { '<prefix>{k}:' .. alg .. ':<path>', '<prefix>{k}:' .. alg .. '_meta:<path>',
        '<prefix>{k}:registry:' .. alg, '<prefix>{k}:rules', '<prefix>{k}:stats' }
      return nil, nil, nil, fail('KEYS[' .. i .. ']', form[i] .. ' for this path and shard (' .. base .. ')')
    end
  end
  return path, base, k
end

-- nil when path belongs to shard k, else the error reply that names its shard.
-- (keyslot, not shard_of: one function fewer defined at every call.)
local function contract_shard(path, k)
  local s = keyslot(path) % SHARD_COUNT
  if s == k then return nil end
  return redis.error_reply('ERR sluice: path ' .. shown(path) .. ' belongs to shard ' .. s
    .. ', not ' .. k .. ' (its keys carry {' .. s .. '})')
end

-- ARGV[2..] and the rule: n (at most max_n, nil = 2^53-1), now and the rule
-- applied R; or nil, nil, nil and the reply to return at once: an error
-- reply, or the reply of "*" matching no rule ({1, -1, 0, 0, "none"}: the
-- call is admitted and stores nothing, remaining -1 for "no limit applies";
-- its shard is checked all the same, with `k` the keys' shard, so that a
-- client that builds wrong keys hears it now, not when a rule comes to
-- match).  `fields` names the algorithm's parameters ({'capacity', 'rate'},
-- ...), `cache` is the path's hash that keeps the "*" cache (lib/rule.lua).
-- R = {p1, p2, ..., name = the rule applied ("" for explicit parameters),
-- shadow = the rule's mode is shadow, cache = the copy's version to record,
-- lag, lag_at = how many ms an explicit now is behind Redis TIME, and that
-- TIME (contract_reply records them); nil when not behind}, the parameters
-- as text (ARGV[5..] themselves when explicit).
-- With a rule reference ARGV[5..] are absent or all "": numbers given there
-- beside a rule are refused rather than silently overridden.
-- An explicit now more than SKEW_MS ahead of Redis TIME is refused: served
-- at, it would become the path's time mark, and every later call (at Redis
-- time) would be served at that far future, the state kept until then.  A
-- clock that far ahead is not one the skew horizon covers (read from the
-- rules copy, KEYS[4], by skew_load, or with the rule).
local function contract_args(alg, fields, max_n, cache, k)
  local count, ref = #fields, ARGV[4]
  if not (#ARGV == 4 + count or (#ARGV == 4 and ref ~= '')) then
    return nil, nil, nil, redis.error_reply('ERR sluice: ' .. alg .. ' takes ARGV path, n, now, rule, then ' .. table.concat(fields, ', ')
      .. ' (' .. (4 + count) .. ' in all), or path, n, now and a rule reference (4)')
  end
  local n, err = arg_cost(ARGV[2], max_n)
  if err then return nil, nil, nil, err end
  local now
  now, err = arg_now(ARGV[3])
  if err then return nil, nil, nil, err end
  local R
  if ref == '' then
    R = { name = '', shadow = false }
    for i = 1, count do R[i] = ARGV[4 + i] end
  else
    if ref ~= '*' and (#ref > RULE_NAME_MAX or not string.find(ref, '^[A-Za-z0-9_%.%-]+$')) then
      return nil, nil, nil, fail('rule (ARGV[4])', '"" (explicit parameters), "*" or a rule name'
        .. ' (1 to 64 bytes of A-Z a-z 0-9 _ . -)')
    end
    for i = 5, #ARGV do
      if ARGV[i] ~= '' then
        return nil, nil, nil, fail('ARGV[' .. i .. '] (' .. fields[i - 4] .. ')', '"" with a rule reference in ARGV[4] ('
          .. shown(ref) .. '), whose parameters apply')
      end
    end
    R, err = rule_resolve(alg, fields, ref, KEYS[4], cache, ARGV[1])
    if err then return nil, nil, nil, err end
  end
  if ARGV[3] ~= '' then
    skew_load(KEYS[4])
    local server = arg_now('')
    if now > server + SKEW_MS then
      return nil, nil, nil, fail('now (ARGV[3])', 'at most max_clock_skew_ms (' .. fmt_int(SKEW_MS)
        .. ' ms) ahead of Redis TIME; it is ' .. fmt_int(now - server) .. ' ms ahead')
    end
    if now < server then R.lag, R.lag_at = server - now, server end
  end
  if R.name == 'none' then
    return nil, nil, nil, contract_shard(ARGV[1], k) or { 1, -1, 0, 0, 'none' }
  end
  return n, now, R
end

-- The reply {allowed, remaining, retry_after_ms, reset_ms, rule} of a call
-- that decided, R's (contract_args), after the decision's writes: the last
-- step of the call, so that a call refused with an error reply (which
-- writes nothing) counts nothing either.  allowed is the rule's decision:
-- 1 admitted, 0 refused; a shadow rule's refusal is admitted (allowed 1,
-- retry_after_ms 0; remaining and reset_ms the refusal's).
--
-- The shard's stats KEYS[5] (<prefix>{k}:stats, a hash; the daemon sums the
-- shards), at most one write per thing counted:
--   <rule>:allowed, <rule>:denied, <rule>:shadow_denied  HINCRBY 1 per call
--       (not by n) that applied a rule (by name, or "*" with a match):
--       admitted (a shadow rule's admissions included), refused (enforce),
--       or refused and admitted (shadow).  Explicit parameters count nothing.
--   :lag:<minute>  the largest lag of an explicit now behind Redis TIME seen
--       in that minute, ms (minute = floor(TIME ms / 60000)): HGET, then HSET
--       only when larger; explicit parameters too.  No lag, no write.
-- Both with redis.pcall, errors ignored: a stats key of another type (or a
-- field that is not a number) loses the count, never the call, whose state
-- is written already.
local function contract_reply(R, allowed, remaining, retry_after, reset)
  local stats, name = KEYS[5], R.name
  if name ~= '' then
    local what = ':allowed'
    if allowed == 0 then
      if R.shadow then
        what, allowed, retry_after = ':shadow_denied', 1, 0
      else
        what = ':denied'
      end
    end
    redis.pcall('HINCRBY', stats, name .. what, 1)
  end
  local lag = R.lag
  if lag then
    local field = ':lag:' .. fmt_int(math.floor(R.lag_at / 60000))
    local v = redis.pcall('HGET', stats, field)
    if type(v) ~= 'table' and not ((stored_int(v) or -1) >= lag) then
      redis.pcall('HSET', stats, field, fmt_int(lag))
    end
  end
  return { allowed, remaining, retry_after, reset, name }
end
