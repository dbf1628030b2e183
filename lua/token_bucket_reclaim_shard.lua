#!lua flags=allow-oom
-- PLACEHOLDER (being written): token_bucket_reclaim over one shard's due index.
--@include lib/due.lua

return due_run('token_bucket', function(path, state, meta, now)
  return 0, nil
end)
