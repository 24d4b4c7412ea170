-- grain: one row per (source, session, file, run that loaded records of it) of the current
-- version of each file: the session's facts over those records (sql/extract/session_parts.sql),
-- which sessions and int_session_metadata combine instead of reading every record
with parts as (
    select * from lake_session_parts
),

current_files as (
    select file_id, epoch from int_current_files
),

final as (
    select parts.*
    from parts
    join current_files
        on current_files.file_id = parts.file_id
        and current_files.epoch = parts.file_epoch
)

select * from final
