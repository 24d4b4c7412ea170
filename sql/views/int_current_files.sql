-- grain: one row per source file whose rows are part of the live warehouse, with the epoch
-- (version) that is current. A file the agent deleted stays (the archive keeps what the
-- store lost), unless the same session lives on in another file of the same source, as when
-- Codex replaces a rollout by its compressed copy: then only the live file counts.
with files as (
    select file_id, source, epoch, gone, session_hint
    from source_files
),

live_sessions as (
    select distinct source, session_hint
    from files
    where not gone and session_hint is not null
),

final as (
    select files.file_id, files.epoch
    from files
    left join live_sessions
        on live_sessions.source = files.source
        and live_sessions.session_hint = files.session_hint
    where not files.gone or live_sessions.session_hint is null
)

select * from final
