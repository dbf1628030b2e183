-- lib/args.lua: checks of the scripts' arguments (lua/README.md, "Validation").
--
-- Integers are decimal digits only and below 2^53; a rate is a finite decimal
-- number > 0.  A bad argument gives an error reply naming the field,
-- "ERR sluice: <field> must be <what>", before the script writes anything.
-- Each arg_* check returns the value, or nil and that reply.  A batch script
-- passes the item being checked (noun "bucket", index i), so the message
-- says which one: "... must be an integer from 1 to 2^53-1 (bucket 3)".
--@include lib/num.lua

local function fail(field, what)
  return redis.error_reply('ERR sluice: ' .. field .. ' must be ' .. what)
end

-- The path as an error message shows it: printable ASCII as is, other bytes
-- as \xHH, cut at 64 bytes.
local function shown(s)
  local cut = ''
  if #s > 64 then s, cut = s:sub(1, 64), '...' end
  return '"' .. s:gsub('[^%w%p ]', function(c) return string.format('\\x%02x', c:byte()) end)
    :gsub('"', '\\"') .. cut .. '"'
end

-- The error reply for KEYS or ARGV that do not fit the script's shape:
-- "ERR sluice: <script> takes ...".
local function usage(text)
  return redis.error_reply('ERR sluice: ' .. text)
end

-- " (bucket 3)" for item i of a batch, "" for a single call.
local function item(noun, i)
  if noun then return ' (' .. noun .. ' ' .. i .. ')' end
  return ''
end

-- Decimal digits only (no sign, exponent, hex or blanks), min <= v < 2^53
-- (a longer number would round: 2^53 + 1 reads as 2^53).
local function int_arg(s, min)
  if type(s) ~= 'string' or not s:find('^%d+$') then return nil end
  local v = tonumber(s)
  if v < min or v >= MAX_INT then return nil end
  return v
end

-- A finite decimal number > 0 ("inf", "nan" and hex are refused).
local function rate_arg(s)
  if type(s) ~= 'string' or not s:find('^[%d%.eE%+%-]+$') then return nil end
  local v = tonumber(s)
  if not v or not (v > 0) or v >= math.huge then return nil end
  return v
end

-- A path (registry member): any non-empty string.
local function arg_path(s, noun, i)
  if type(s) ~= 'string' or s == '' then return nil, fail('path', 'a non-empty string' .. item(noun, i)) end
  return s
end

-- An integer >= 1 (capacity, limit, window_ms).
local function arg_int(s, field, noun, i)
  local v = int_arg(s, 1)
  if not v then return nil, fail(field, 'an integer from 1 to 2^53-1' .. item(noun, i)) end
  return v
end

-- A rate in `unit`s ("entries", "tokens") per second.
local function arg_rate(s, unit, noun, i)
  local v = rate_arg(s)
  if not v then
    local of = ''
    if noun then of = '; ' .. noun .. ' ' .. i end
    return nil, fail('rate', 'a finite number > 0 (' .. unit .. ' per second' .. of .. ')')
  end
  return v
end

-- The cost n of one request: 1 when absent or "", else an integer from 1 to
-- max (the leaky bucket caps it: one sorted-set member per unit).
local function arg_cost(s, max)
  if s == nil or s == '' then return 1 end
  local v = int_arg(s, 1)
  if not v or (max and v > max) then
    return nil, fail('n', 'an integer from 1 to ' .. (max and fmt_int(max) or '2^53-1'))
  end
  return v
end
