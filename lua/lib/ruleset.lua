-- lib/ruleset.lua: the rule that governs a path, for the rule reference `*`
-- of the calling contract (DESIGN.md, "Rules"), with exactly the daemon's
-- precedence: core/rules.c's ruleset_match over a ruleset loaded as
-- core/rulestore.c loads one (rulestore_refresh: invalid entries skipped,
-- then sorted by name, byte order).
--
-- Precedence, as the C code decides it:
--   - a rule is exact when its match holds none of the bytes * ? [ \ ; a
--     match with a '\' is a glob even when it escapes every metacharacter
--     ("/a\*" is a glob that matches only "/a*", of literal prefix 2);
--   - a matching exact rule wins over every glob; among several (equal
--     matches), the smallest name;
--   - among matching globs the longest literal prefix wins: the bytes before
--     the first * ? [ \ (so an escaped byte ends the prefix too); then the
--     smallest name.
-- Names compare by their bytes, not with Lua's '<' on strings, which is
-- strcoll(3) and so follows the locale Redis runs in (Redis calls
-- setlocale(LC_COLLATE, "")): in en_US.UTF-8 "a" < "B" and '-', '.', '_'
-- barely count, while the daemon's strcmp puts "B" before "a".
--
-- What the daemon refuses to load is skipped here too, so both see the same
-- rules: a name that is not 1..64 bytes of [A-Za-z0-9_.-] (so a field like
-- ":max_clock_skew_ms" of a shard's rules copy is never a rule), and a match
-- that is empty, over 1024 bytes, holds a NUL byte (core/jsonv.c refuses
-- rule text with NUL or "\u0000": the daemon's matches are C strings) or is
-- not glob_valid.
--@include lib/glob.lua

local RULE_NAME_MAX = 64
local RULE_MATCH_MAX = 1024
--
-- Cost: as lib/glob.lua's, the functions are built inside one, ruleset_lib,
-- called when "*" resolves afresh: an explicit call, a call by name and "*"
-- answered by its cache define none of them.

-- ruleset_lib(): ruleset_match, rule_literal_prefix (below), and glob_match,
-- glob_valid (lib/glob.lua), defined by this call.
local function ruleset_lib()
  local glob_valid, glob_match = glob_lib()

  -- rule_literal_prefix(match): the length in bytes of the match's literal
  -- prefix (the bytes before its first * ? [ \) and whether it is a glob
  -- (holds any of them).  core/rules.c's literal_prefix.
  local function rule_literal_prefix(match)
    local at = string.find(match, '[%*%?%[\\]')
    if at then return at - 1, true end
    return #match, false
  end

  -- rule_name_before(a, b): true when name a sorts before name b by bytes
  -- (strcmp(3) < 0), whatever the locale.
  local function rule_name_before(a, b)
    local byte = string.byte
    local n = math.min(#a, #b)
    for i = 1, n do
      local x, y = byte(a, i), byte(b, i)
      if x ~= y then return x < y end
    end
    return #a < #b
  end

  -- ruleset_match(rules, path): the name of the rule that governs path (any
  -- bytes), or nil when none matches.  `rules` is a flat list {name1, match1,
  -- name2, match2, ...} (the shape of an HGETALL reply), names unique (a hash's
  -- fields); entries the daemon would refuse are skipped (see above).  Reads
  -- nothing from Redis; never errors on strings of any bytes.  Cost: a few
  -- string.find per rule, glob_match for the globs that could still win, and
  -- glob_valid only for one that matches.  (Not %w for the name: Lua's classes
  -- follow the C library's ctype; the ranges compare bytes.)
  local function ruleset_match(rules, path)
    local exact, best, best_prefix
    for i = 1, #rules - 1, 2 do
      local name, match = rules[i], rules[i + 1]
      if #name <= RULE_NAME_MAX and string.find(name, '^[A-Za-z0-9_%.%-]+$')
          and match ~= '' and #match <= RULE_MATCH_MAX
          and not string.find(match, '\0', 1, true) then
        local prefix, is_glob = rule_literal_prefix(match)
        if not is_glob then
          if match == path and (not exact or rule_name_before(name, exact)) then
            exact = name
          end
        elseif not exact
            and (not best or prefix > best_prefix
                 or (prefix == best_prefix and rule_name_before(name, best)))
            and glob_match(match, path) and glob_valid(match) then
          best, best_prefix = name, prefix
        end
      end
    end
    return exact or best
  end

  return ruleset_match, rule_literal_prefix, glob_match, glob_valid
end
