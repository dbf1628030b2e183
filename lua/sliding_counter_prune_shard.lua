#!lua flags=allow-oom
-- PLACEHOLDER (being written): sliding_counter_prune over one shard's due index.
--@include lib/due.lua

return due_run('sliding_counter', function(path, state, meta, now)
  return 0, nil
end)
