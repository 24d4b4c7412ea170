-- grain: one row per physical record of the current version of every source file
-- A rewritten source file gets a new epoch; rows of older epochs stay in Parquet (the archive
-- never loses them) but only the current version is part of the live warehouse: its current
-- epoch, and the lines of earlier ones it kept (int_current_lines).
with records as (
    select * from lake_records
),

current_lines as (
    select file_id, epoch, first_line, last_line from int_current_lines
),

final as (
    select records.*
    from records
    join current_lines
        on current_lines.file_id = records.file_id
        and current_lines.epoch = records.file_epoch
        and records.line_no between current_lines.first_line and current_lines.last_line
)

select * from final
