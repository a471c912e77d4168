-- callMany(command, key, args): runs `command key ...args` with many arguments in as few calls as it
-- can, a thousand at a time (Lua's unpack stops at about 8,000; a thousand keeps score/member pairs
-- whole). One ZADD of a hundred members costs one command, not a hundred.
local function callMany(command, key, args)
  for from = 1, #args, 1000 do
    redis.call(command, key, unpack(args, from, math.min(from + 999, #args)))
  end
end
