-- shard_probe: fuzz/fuzz_lua_shard.c's Lua side, not embedded, not
-- installed.  ARGV[1] is a path (any bytes); answers {keyslot, shard_of} of
-- lib/shard.lua, which the target compares with core/shard.c.
--@include lib/shard.lua

return { keyslot(ARGV[1]), shard_of(ARGV[1]) }
