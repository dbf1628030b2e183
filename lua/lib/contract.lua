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
--   parameters, the only form accepted until rules by name come),
--   ARGV[5..] the algorithm's parameters.
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

-- The path as an error message shows it: printable ASCII as is, other bytes
-- as \xHH, cut at 64 bytes.
local function shown(s)
  local cut = ''
  if #s > 64 then s, cut = s:sub(1, 64), '...' end
  return '"' .. s:gsub('[^%w%p ]', function(c) return string.format('\\x%02x', c:byte()) end)
    :gsub('"', '\\"') .. cut .. '"'
end

-- The shard's part of every key: "<prefix>{k}" from KEYS[1], and k; or nil
-- and the error reply.  `alg` is the script's algorithm name.
local function contract_keys(alg, nparams)
  if #KEYS ~= 5 then
    return nil, nil, nil, usage(alg .. ' takes 5 KEYS (state, meta, registry, rules, stats) and ARGV path, n, now, rule'
      .. ', then ' .. nparams)
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
local function contract_shard(path, k)
  local s = shard_of(path)
  if s == k then return nil end
  return redis.error_reply('ERR sluice: path ' .. shown(path) .. ' belongs to shard ' .. s
    .. ', not ' .. k .. ' (its keys carry {' .. s .. '})')
end

-- ARGV[2..4] and the count of the rest: n (at most max_n, nil = 2^53-1),
-- now and the rule, or an error reply last.  `nparams` names the
-- parameters for the usage message, `count` how many there are.
-- An explicit now more than SKEW_MS ahead of Redis TIME is refused: served
-- at, it would become the path's time mark, and every later call (at Redis
-- time) would be served at that far future, the state kept until then.  A
-- clock that far ahead is not one the skew horizon covers (read from the
-- rules copy, KEYS[4], by skew_load).
local function contract_args(alg, nparams, count, max_n)
  if #ARGV ~= 4 + count then
    return nil, nil, nil, usage(alg .. ' takes ARGV path, n, now, rule, then ' .. nparams
      .. ' (' .. (4 + count) .. ' in all)')
  end
  local n, err = arg_cost(ARGV[2], max_n)
  if err then return nil, nil, nil, err end
  local now
  now, err = arg_now(ARGV[3])
  if err then return nil, nil, nil, err end
  if ARGV[3] ~= '' then
    skew_load(KEYS[4])
    local server = arg_now('')
    if now > server + SKEW_MS then
      return nil, nil, nil, fail('now (ARGV[3])', 'at most max_clock_skew_ms (' .. fmt_int(SKEW_MS)
        .. ' ms) ahead of Redis TIME; it is ' .. fmt_int(now - server) .. ' ms ahead')
    end
  end
  if ARGV[4] ~= '' then
    return nil, nil, nil, fail('rule (ARGV[4])', '"" with explicit parameters in ARGV[5..]'
      .. ' (rule names and "*" are not supported by this version)')
  end
  return n, now, ''
end
