-- glob_probe: a test-only script (tests/check_glob_lua.c) that runs the
-- fragments lib/glob.lua and lib/ruleset.lua on many inputs in one call, so
-- the test can compare them with core/glob.c and core/rules.c.  Not
-- embedded, not installed.  ARGV[1] names the question:
--   match   ARGV[2..] pairs (pattern, path): one 1/0 per pair (glob_match)
--   valid   ARGV[2..] patterns: one 1/0 each (glob_valid)
--   prefix  ARGV[2..] matches: two integers each, the literal prefix and
--           1/0 for a glob (rule_literal_prefix)
--   pick    ARGV[2..] groups (path, n, n pairs name match): one name per
--           group, "" when no rule matches (ruleset_match; "" is no name)
--@include lib/ruleset.lua

local ruleset_match, rule_literal_prefix, glob_match, glob_valid = ruleset_lib()

local q, out = ARGV[1], {}
if q == 'match' then
  for i = 2, #ARGV - 1, 2 do
    out[#out + 1] = glob_match(ARGV[i], ARGV[i + 1]) and 1 or 0
  end
elseif q == 'valid' then
  for i = 2, #ARGV do out[#out + 1] = glob_valid(ARGV[i]) and 1 or 0 end
elseif q == 'prefix' then
  for i = 2, #ARGV do
    local n, g = rule_literal_prefix(ARGV[i])
    out[#out + 1] = n
    out[#out + 1] = g and 1 or 0
  end
elseif q == 'pick' then
  local i = 2
  while i <= #ARGV do
    local path, n, rules = ARGV[i], tonumber(ARGV[i + 1]), {}
    for j = 1, 2 * n do rules[j] = ARGV[i + 1 + j] end
    out[#out + 1] = ruleset_match(rules, path) or ''
    i = i + 2 + 2 * n
  end
else
  return redis.error_reply('ERR glob_probe: unknown question ' .. tostring(q))
end
return out
