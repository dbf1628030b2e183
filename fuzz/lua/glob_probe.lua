-- glob_probe: fuzz/fuzz_lua_glob.c's Lua side, not embedded, not installed.
-- ARGV[1] a pattern, ARGV[2] a path (any bytes); answers lib/glob.lua's and
-- lib/ruleset.lua's view of them, which the target compares with
-- core/glob.c and core/rules.c:
--   {glob_valid, glob_match, literal prefix length, is_glob}  (1/0 for booleans)
--@include lib/ruleset.lua

local _, rule_literal_prefix, glob_match, glob_valid = ruleset_lib()
local n, g = rule_literal_prefix(ARGV[1])
return { glob_valid(ARGV[1]) and 1 or 0, glob_match(ARGV[1], ARGV[2]) and 1 or 0, n, g and 1 or 0 }
