-- lib/glob.lua: glob matching of rule `match` patterns against paths, the
-- same function as core/glob.c (glob_match, glob_valid), byte for byte.
-- The dialect (core/glob.h) is fnmatch(3)'s with no flags:
--   *       any run of bytes, '/' included
--   ?       one byte
--   [...]   one byte of the set: ranges a-z (a reversed one holds nothing),
--           a leading ! or ^ negates, a leading ] (after the negation) is
--           literal, \ escapes the next byte; a '[' whose set never closes
--           is a literal '['
--   \c      the byte c itself
--   other   itself (no POSIX classes: "[[:alpha:]]" is a set of '[', ':', ...)
-- Binary-safe: patterns and paths are Lua strings of any bytes (NUL and
-- 0x80-0xFF too); bytes compare as unsigned numbers (string.byte).
--
-- Algorithm: core/glob.c's, step for step (indices here are 1-based): one
-- pass over the path, remembering only the last '*' (where it stood in the
-- pattern and how many path bytes it has taken); on a mismatch that '*'
-- takes one more byte and matching resumes after it.  Every other token
-- matches exactly one byte, so an earlier '*' never needs to take more
-- (what a later '*' can skip covers it), and the cost is at most
-- (pattern bytes) x (path bytes) steps, never exponential: "*a*a*a*a*a*b"
-- on 10 kB of "a" is linear.  This is the classic wildcard matcher (Kirk
-- Krauss, "Matching Wildcards", Dr Dobb's 2008; Redis's stringmatchlen
-- recurses instead).  One step is Lua's, not C's: the run of plain bytes
-- right after the last '*' is found with a plain string.find (C speed)
-- instead of byte by byte, both when the '*' is met and each time it takes
-- more, and the run is then passed over as matched.  Where the run is
-- absent from the rest of the path no placing of the '*' can match (it can
-- only move right), so the answer is the same: false.  What stays
-- quadratic in Lua steps is a long tail of '?' and sets after a '*': 1 kB
-- of "a?a?..." on a 10 kB path of "a" takes some 1.8 s of Redis's time (C:
-- milliseconds); the 1 kB literal after a '*' takes 1 ms
-- (tests/check_glob_lua.c, the pathological cases, print their times).
--
-- Only patterns that are glob_valid are rules (the daemon refuses others);
-- glob_match still answers exactly as core/glob.c for any bytes (a '[' that
-- never closes is literal, a lone '\' at the end matches nothing), never
-- errors and always ends.
--
-- Cost: only the rule reference "*" matches globs, yet Lua defines every
-- top-level local function of a script anew at each call (some 1.1k Redis
-- instructions each, callgrind), explicit calls included.  So the three
-- functions are built inside one, glob_lib, by the caller that needs them.

-- glob_lib(): glob_valid and glob_match (below), defined by this call.
local function glob_lib()
  -- glob_set(pat, plen, i, c): the set whose text starts at pat[i] (just after
  -- its '['), asked for byte c (0..255).  Returns whether c is in it (after the
  -- negation) and the index just past its closing ']'; nil when it does not
  -- close (pattern end first, also inside a range "[a-").  core/glob.c's
  -- bracket().
  local function glob_set(pat, plen, i, c)
    local byte = string.byte
    local neg, hit, first = false, false, true
    local b = byte(pat, i)
    if b == 33 or b == 94 then -- '!' '^'
      neg, i = true, i + 1
    end
    while true do
      if i > plen then return nil end
      b = byte(pat, i)
      if b == 93 and not first then break end -- ']'
      if b == 92 and i < plen then -- '\'
        i = i + 1
        b = byte(pat, i)
      end
      local lo, hi = b, b
      i = i + 1
      if i < plen and byte(pat, i) == 45 and byte(pat, i + 1) ~= 93 then -- '-' not before ']'
        i = i + 1
        if byte(pat, i) == 92 and i < plen then i = i + 1 end
        hi = byte(pat, i)
        i = i + 1
      end
      if lo <= c and c <= hi then hit = true end
      first = false
    end
    return hit ~= neg, i + 1
  end

  -- glob_valid(pat): true when the glob is well formed (every '[' closes, no
  -- lone '\' at the end), which is what a rule's `match` must be; else false.
  -- core/glob.c's glob_valid.
  local function glob_valid(pat)
    local byte, plen, i = string.byte, #pat, 1
    while i <= plen do
      local b = byte(pat, i)
      if b == 92 then
        i = i + 1
        if i > plen then return false end
      elseif b == 91 then
        local m, q = glob_set(pat, plen, i + 1, 0)
        if m == nil then return false end
        i = q - 1
      end
      i = i + 1
    end
    return true
  end

  -- glob_match(pat, s): true when the whole of path s matches glob pat, else
  -- false (both strings of any bytes).  core/glob.c's glob_match.
  local function glob_match(pat, s)
    if not string.find(pat, '[%*%?%[\\]') then
      return pat == s -- every byte is literal
    end
    local byte = string.byte
    local plen, slen = #pat, #s
    local pi, si = 1, 1
    local star_p, star_s = nil, 0 -- where to resume after the last '*'
    local run, rn = '', 0           -- the plain bytes right after it
    while si <= slen do
      local ok = false
      if pi <= plen then
        local p = byte(pat, pi)
        if p == 42 then -- '*'
          repeat pi = pi + 1 until pi > plen or byte(pat, pi) ~= 42
          if pi > plen then return true end
          local e = string.find(pat, '[%*%?%[\\]', pi) or plen + 1
          star_p, star_s, ok = pi, si, true
          run, rn = string.sub(pat, pi, e - 1), e - pi
          if rn > 0 then
            local at = string.find(s, run, si, true)
            if not at then return false end
            star_s, si, pi = at, at + rn, pi + rn
          end
        elseif p == 63 then -- '?'
          pi, si, ok = pi + 1, si + 1, true
        elseif p == 91 then -- '['
          local c = byte(s, si)
          local m, q = glob_set(pat, plen, pi + 1, c)
          if m then
            pi, si, ok = q, si + 1, true
          elseif m == nil and c == 91 then -- no ']': a literal '['
            pi, si, ok = pi + 1, si + 1, true
          end
        else
          if p == 92 then -- '\'
            if pi == plen then return false end -- escapes nothing: no match
            pi = pi + 1
            p = byte(pat, pi)
          end
          if p == byte(s, si) then pi, si, ok = pi + 1, si + 1, true end
        end
      end
      if not ok then -- mismatch: let the last '*' take one more byte
        if not star_p then return false end
        star_s = star_s + 1
        pi, si = star_p, star_s
        if rn > 0 then -- (and as many more as its run needs)
          local at = string.find(s, run, star_s, true)
          if not at then return false end
          star_s, si, pi = at, at + rn, star_p + rn
        end
      end
    end
    while pi <= plen and byte(pat, pi) == 42 do pi = pi + 1 end
    return pi > plen
  end

  return glob_valid, glob_match
end
