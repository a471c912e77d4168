-- nowMs(): Redis's clock in milliseconds (every process agrees on it; their own clocks may not).
local function nowMs()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
