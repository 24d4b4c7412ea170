-- grain: one row per load of a file that the file's current version still holds: its epoch
-- and the lines of it that are live. A file is its current epoch whole (lines 1 to the end),
-- except a rewritten container that kept its first lines where they were loaded and loaded
-- the rest as a new epoch (file_versions): each of its loads is live from its first line up
-- to the line before the next one's.
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

whole_files as (
    select c.file_id, c.epoch, 1::bigint as first_line, 9223372036854775807 as last_line
    from current_files as c
    anti join versions as v on v.file_id = c.file_id
),

final as (
    select * from whole_files
    union all
    select * from versions
)

select * from final
