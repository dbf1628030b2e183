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

-- An acquire's ARGV: path, capacity, rate, n (cost, at most max_n), now.
local function arg_bucket_call(argv, unit, max_n)
  local path, capacity, rate, n, err
  path, err = arg_path(argv[1])
  if not err then capacity, rate, err = arg_bucket(argv[2], argv[3], unit) end
  if not err then n, err = arg_cost(argv[4], max_n) end
  if err then return nil, nil, nil, nil, nil, err end
  return path, capacity, rate, n, arg_now(argv[5])
end

-- An admin read's ARGV from argv[i]: capacity, rate, now.
local function arg_bucket_now(argv, i, unit)
  local capacity, rate, err = arg_bucket(argv[i], argv[i + 1], unit)
  if err then return nil, nil, nil, err end
  return capacity, rate, arg_now(argv[i + 2])
end
