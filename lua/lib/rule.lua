-- lib/rule.lua: the rule reference of a client call, ARGV[4] (DESIGN.md,
-- "Rules" and "Client scripts: the calling contract"; lua/README.md,
-- "Calling by rule").
--
--   ""      explicit parameters in ARGV[5..];
--   a name  the rule of that name in the shard's rules copy KEYS[4];
--   "*"     the rule of the copy that matches the path, by the daemon's
--           precedence (lib/ruleset.lua); none matching: the call is
--           admitted and nothing is stored (reply rule "none").
--
-- The copy `<prefix>{k}:rules` is a hash the daemon writes: field <name> =
-- the rule's JSON ({"name":..,"match":..,"algorithm":..,<parameters>,
-- "mode":"shadow"?}), ":version" = "<epoch>:<version>" (changes with every
-- rule change), ":max_clock_skew_ms" (lib/skew.lua).  Fields that start
-- with ':' are not rules (no rule name holds a ':').
--
-- The parameters of a rule come back as the text ARGV[5..] would hold (so
-- the scripts validate, compare and record them as they do explicit ones):
-- an integral number from 0 to 2^53 - 1 as its digits, another as the
-- shortest of %.15g / %.17g that reads back as the same double.  A rule
-- field of the wrong type is refused by name; the script's own checks
-- (arg_int, arg_rate, ...) then refuse a bad value, and rule_failed puts
-- the rule's name in front of their message.
--
-- Cost.  A name: one HMGET of the copy (the rule and ":max_clock_skew_ms",
-- which every admission reads anyway: SKEW_MS is loaded by it) and one
-- cjson.decode.  "*": the whole copy (HGETALL, a decode per rule) once per
-- path and rule change: the name it resolves to is cached in the path's
-- state (fields rv = the copy's ":version" at the time, rn = the name,
-- written by the next admission), so a path that has state resolves with
-- one HMGET of its cache fields and one HMGET of the copy (":version", the
-- cached rule, ":max_clock_skew_ms").  A ":version" that differs from rv (a
-- rule was put or deleted), or a cached rule gone, resolves afresh.  A copy
-- with no ":version" (written by hand) is never cached against.
--@include lib/skew.lua
--@include lib/ruleset.lua

-- Lua defines every top-level local function anew at each call of a script,
-- some 1.1k Redis instructions each (callgrind), explicit calls included: so
-- the work is in two functions, not one per step, and what only "*" needs
-- (lib/ruleset.lua) is built by ruleset_lib when "*" resolves afresh.

-- A script's error reply err for a parameter of rule R (rule_resolve), with
-- the rule named ("ERR sluice: rule "<name>" (in <copy>): <what>"); err
-- itself for explicit parameters.
local function rule_failed(R, rules, err)
  if R.name == '' then return err end
  return redis.error_reply('ERR sluice: rule ' .. shown(R.name) .. ' (in ' .. rules .. '): '
    .. err.err:gsub('^ERR sluice: ', ''))
end

-- The rule of a call: ref = ARGV[4] (not ""), `rules` the copy (KEYS[4]),
-- `cache` the path's hash that keeps rv and rn ("*" only), `path` ARGV[1];
-- `fields` the algorithm alg's parameters (a list of names).  Returns R =
-- {params..., name = the rule's name, shadow = its mode is shadow, cache =
-- the copy's version when "*" resolved afresh and the copy has one (the
-- admission then writes rv = R.cache, rn = R.name)}; or {name = 'none'} when
-- "*" matched nothing; or nil and the error reply naming the rule and the
-- field.  Sets SKEW_MS from the copy (lib/skew.lua's skew_load, read here
-- with the rule in one call; a copy of another type is refused).
local function rule_resolve(alg, fields, ref, rules, cache, path)
  -- the error reply "ERR sluice: rule "<name>" (in <copy>): <what>"
  local function rule_error(name, what)
    return redis.error_reply('ERR sluice: rule ' .. shown(name) .. ' (in ' .. rules .. '): ' .. what)
  end
  local name, r, json, skew, version
  if ref ~= '*' then
    local v = redis.pcall('HMGET', rules, ref, ':max_clock_skew_ms')
    if v.err then return nil, fail('KEYS[4]', 'a hash (the shard\'s rules copy)') end
    SKEW_MS, SKEW_LOADED = stored_int(v[2]) or SKEW_MS, true
    if not v[1] then
      return nil, redis.error_reply('ERR sluice: no rule ' .. shown(ref) .. ' (in ' .. rules .. '; is sluiced running?)')
    end
    name, json = ref, v[1]
  else
    local c = redis.call('HMGET', cache, 'rv', 'rn')
    if c[1] and c[2] then
      local v = redis.pcall('HMGET', rules, ':version', c[2], ':max_clock_skew_ms')
      if v.err then return nil, fail('KEYS[4]', 'a hash (the shard\'s rules copy)') end
      if v[1] == c[1] and v[2] then name, json, skew = c[2], v[2], v[3] or false end
    end
    if not name then
      local h = redis.pcall('HGETALL', rules)
      if h.err then return nil, fail('KEYS[4]', 'a hash (the shard\'s rules copy)') end
      local list, decoded, n = {}, {}, 0
      skew = false
      for i = 1, #h - 1, 2 do
        local f = h[i]
        if string.byte(f, 1) == 58 then -- ':'
          if f == ':version' then version = h[i + 1]
          elseif f == ':max_clock_skew_ms' then skew = h[i + 1] end
        else
          local ok, d = pcall(cjson.decode, h[i + 1])
          if not ok or type(d) ~= 'table' then return nil, rule_error(f, 'not a JSON object') end
          if type(d.match) ~= 'string' then return nil, rule_error(f, 'match must be a string') end
          list[n + 1], list[n + 2], decoded[f] = f, d.match, d
          n = n + 2
        end
      end
      name = (ruleset_lib())(list, path)
      if name then r = decoded[name] end
    end
    SKEW_MS, SKEW_LOADED = stored_int(skew) or SKEW_MS, true
    if not name then return { name = 'none' } end
  end
  if not r then
    local ok
    ok, r = pcall(cjson.decode, json)
    if not ok or type(r) ~= 'table' then return nil, rule_error(name, 'not a JSON object') end
  end
  if r.algorithm ~= alg then
    if type(r.algorithm) ~= 'string' then return nil, rule_error(name, 'algorithm must be a string') end
    -- a script's name when it can be one (the value is Redis's data: shown quoted otherwise)
    local script = string.find(r.algorithm, '^[a-z_]+$') and r.algorithm .. '.lua' or shown(r.algorithm)
    return nil, rule_error(name, 'a ' .. shown(r.algorithm) .. ' rule, called with the ' .. alg
      .. ' script (call ' .. script .. ', or name a ' .. alg .. ' rule)')
  end
  local R = { name = name, shadow = false, cache = version }
  if r.mode == 'shadow' then
    R.shadow = true
  elseif r.mode ~= nil and r.mode ~= 'enforce' then
    return nil, rule_error(name, 'mode must be "enforce" or "shadow"')
  end
  -- the parameters as ARGV would carry them (see above)
  for i = 1, #fields do
    local v = r[fields[i]]
    if type(v) ~= 'number' then return nil, rule_error(name, fields[i] .. ' must be a number') end
    if v == math.floor(v) and v >= 0 and v < MAX_INT then
      R[i] = fmt_int(v)
    else
      local t = string.format('%.15g', v)
      if tonumber(t) ~= v then t = string.format('%.17g', v) end
      R[i] = t
    end
  end
  return R
end
