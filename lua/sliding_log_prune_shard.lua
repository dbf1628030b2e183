#!lua flags=allow-oom
-- PLACEHOLDER (being written): sliding_log_prune over one shard's due index.
--@include lib/due.lua

return due_run('sliding_log', function(path, state, meta, now)
  return 0, nil
end)
