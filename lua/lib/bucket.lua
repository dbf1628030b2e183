-- lib/bucket.lua: the arguments of the two buckets (lua/README.md, "The
-- leaky bucket", "The token bucket"): capacity (entries or tokens, an
-- integer >= 1) and rate (entries leaked or tokens added per second, a
-- finite number > 0).  Each returns the values, or nil and the error reply
-- last.
--@include lib/time.lua

-- capacity and rate of a bucket (`unit` names what rate counts).
local function arg_bucket(cap_s, rate_s, unit, noun, i)
  local capacity, err = arg_int(cap_s, 'capacity', noun, i)
  if not capacity then return nil, nil, err end
  return capacity, arg_rate(rate_s, unit, noun, i)
end
