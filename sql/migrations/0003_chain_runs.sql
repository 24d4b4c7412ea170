-- The run that last rebuilt each file's conversation chains (materialized at ingest, since a
-- recursive walk over the whole archive on every query would be far too slow).
alter table source_files add column if not exists chain_run_id bigint;
