-- lib/num.lua: numbers as the scripts read and write them.
--
-- Lua 5.1 numbers are doubles, exact for every integer below 2^53, so 2^53
-- bounds every integer argument, stored value and TTL.  Redis turns a Lua
-- number into an integer reply by truncating it, and would send one as an
-- argument formatted with %.17g ("1e+16"), so integers go out as text with %d
-- and fractions (carry, tokens) with %.17g, which reads back as the same double.

local MAX_INT = 9007199254740992 -- 2^53

-- rate * ms / 1000 + fraction is not exact in binary: at 10 per minute, a
-- leak at 6007 ms then one at 12000 ms sums to 0.9999999999999998 for the
-- second entry, and an empty token bucket holds 0.9999999999999999 tokens
-- after 6000 ms.  Adding EPS before a floor or a comparison makes such a sum
-- count as the whole entry or token it stands for.
local EPS = 1e-9

local function fmt_int(v) return string.format('%d', v) end

local function fmt_real(v) return string.format('%.17g', v) end

-- A stored finite number >= 0, or nil when absent (false) or anything else.
local function stored(s)
  local v = tonumber(s)
  if not v or v ~= v or v < 0 or v >= math.huge then return nil end
  return v
end

-- A stored whole number from 0 to 2^53 - 1, or nil.
local function stored_int(s)
  local v = stored(s)
  if not v or v >= MAX_INT or v ~= math.floor(v) then return nil end
  return v
end
