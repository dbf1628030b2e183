#!lua flags=allow-oom
-- PLACEHOLDER (being written): fixed_window_repair over one shard's due index.
--@include lib/due.lua

return due_run('fixed_window', function(path, state, meta, now)
  return 0, nil
end)
