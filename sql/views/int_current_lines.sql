-- grain: one row per run of live lines of a file's current version: the epoch they were
-- loaded with and their first and last line. A file is its current epoch whole (lines 1 to
-- the end), except a store read whole that kept lines it gave before where they were loaded
-- and loaded only its new lines, as a new epoch (file_versions, etl/live_lines.py): each of
-- its runs is live from its first line up to the line before the next one's, and a run of
-- epoch 0 is lines no longer live. Such a store also keeps, as runs of their earlier epochs,
-- the lines of a session it deleted inside itself (file_retained, etl/retained.py).
with current_files as (
    select file_id, epoch from int_current_files
),

versions as (
    select
        v.file_id,
        v.epoch,
        v.first_line,
        coalesce(lead(v.first_line) over (partition by v.file_id order by v.first_line) - 1,
                 9223372036854775807) as last_line
    from file_versions as v
    join current_files as c on c.file_id = v.file_id
),

live_versions as (
    select * from versions where epoch <> 0
),

whole_files as (
    select c.file_id, c.epoch, 1::bigint as first_line, 9223372036854775807 as last_line
    from current_files as c
    anti join versions as v on v.file_id = c.file_id
),

retained_lines as (
    select r.file_id, r.epoch, r.first_line, r.last_line
    from file_retained as r
    join current_files as c on c.file_id = r.file_id
),

final as (
    select * from whole_files
    union all
    select * from live_versions
    union all
    select * from retained_lines
)

select * from final
