-- grain: one row per source file whose rows are part of the live warehouse, with the epoch
-- (version) that is current. A file the agent deleted stays (the archive keeps what the
-- store lost), and so does a copy of a store read beside it, unless what it held lives on
-- elsewhere in the same source, and only there counts:
-- - its session, in another file of that session still there that holds at least as many
--   records (as when Codex replaces a rollout by its compressed copy, or Gemini CLI a
--   legacy chat by its JSONL); one with fewer holds something else or less, and the deleted
--   file stays (a subagent's transcript beside its .meta.json; a store's transcript beside
--   the shorter copy of it in a backup read with it);
-- - its session, in a copy of it: the same file in another store (the same session, folder
--   and name: a backup read beside the store it came from, however long the transcript was
--   when it was copied). Of such copies, deleted or not, the one holding most records counts
--   (of as many, the one written last), so the store's transcript counts once, and still
--   counts, whole, after the store deletes it;
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
        path,
        mtime_ns,
        coalesce(container = 'sqlite', false) as is_database
    from source_files
),

-- per session: its files, and the most records one still there holds
by_session as (
    select
        source,
        session_hint,
        count(*) as file_count,
        max(records) filter (where not gone) as live_records
    from files
    where session_hint is not null
    group by source, session_hint
),

-- files of one session with the same name: most sessions have one file, and the files of one
-- with several (a Cline task's, a subagent's transcript and .meta.json) are named apart. Not
-- databases: one holds many sessions, and the copy holding more records need not hold every
-- session of the other (a Cursor workspace's backup keeps chats the live one deleted)
same_name as (
    select source, session_hint, parse_filename(path, false, 'both_slash') as file_name
    from files
    semi join by_session
        on by_session.source = files.source
        and by_session.session_hint = files.session_hint
        and by_session.file_count > 1
    where not is_database
    group by all
    having count(*) > 1
),

named as (
    select
        file_id,
        source,
        session_hint,
        records,
        gone,
        mtime_ns,
        -- a store copied elsewhere keeps each file's folder and name
        regexp_extract(path, '[^/\\]*[/\\][^/\\]*$') as folder_and_name
    from files
    semi join same_name
        on same_name.source = files.source
        and same_name.session_hint = files.session_hint
        and same_name.file_name = parse_filename(files.path, false, 'both_slash')
    where not is_database
),

copies as (
    select
        file_id,
        row_number() over (
            partition by source, session_hint, folder_and_name
            order by records desc, gone, mtime_ns desc, file_id
        ) as copy_rank
    from named
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
    left join by_session
        on by_session.source = files.source
        and by_session.session_hint = files.session_hint
    left join copies using (file_id)
    anti join held_by_databases
        on held_by_databases.file_id = files.file_id
    where coalesce(copies.copy_rank, 1) = 1
        and (not files.gone or by_session.live_records is null or by_session.live_records < files.records)
)

select * from final
