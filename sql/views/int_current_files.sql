-- grain: one row per source file whose rows are part of the live warehouse, with the epoch
-- (version) that is current. A file the agent deleted stays (the archive keeps what the
-- store lost), unless what it held lives on elsewhere in the same source, and only there
-- counts:
-- - its session, in another file of that session still there that holds at least as many
--   records (as when Codex replaces a rollout by its compressed copy, or Gemini CLI a
--   legacy chat by its JSONL); one with fewer holds something else or less, and the deleted
--   file stays (a subagent's transcript beside its .meta.json; a store's transcript beside
--   the shorter copy of it in a backup read with it);
-- - every session it held, in a database of the source (there or deleted: a database keeps
--   every session it held), as OpenCode's database holds those of the JSON tree it took in,
--   a tree read before the database existed. A database gives way so only to one found
--   after it (a store copied to another disk, the old copy deleted), so that of two copies
--   both deleted the later still counts.
with files as (
    select
        file_id,
        source,
        epoch,
        gone,
        session_hint,
        records,
        coalesce(container = 'sqlite', false) as is_database
    from source_files
),

live_sessions as (
    select source, session_hint, max(records) as records
    from files
    where not gone and session_hint is not null
    group by source, session_hint
),

parts as (
    select distinct file_id, source, session_id
    from lake_session_parts
),

database_sessions as (
    select parts.file_id, parts.source, parts.session_id
    from parts
    semi join files
        on files.file_id = parts.file_id
        and files.is_database
),

gone_sessions as (
    select parts.file_id, parts.source, parts.session_id, files.is_database
    from parts
    join files using (file_id)
    where files.gone
),

held_by_databases as (
    select gone_sessions.file_id
    from gone_sessions
    left join database_sessions as held
        on held.source = gone_sessions.source
        and held.session_id = gone_sessions.session_id
        and held.file_id > (case when gone_sessions.is_database then gone_sessions.file_id else 0 end)
    group by gone_sessions.file_id
    having bool_and(held.session_id is not null)
),

final as (
    select files.file_id, files.epoch
    from files
    left join live_sessions
        on live_sessions.source = files.source
        and live_sessions.session_hint = files.session_hint
    anti join held_by_databases
        on held_by_databases.file_id = files.file_id
    where (not files.gone or live_sessions.session_hint is null or live_sessions.records < files.records)
)

select * from final
