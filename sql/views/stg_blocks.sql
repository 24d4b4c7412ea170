-- grain: one row per content block of a current record (text, thinking, tool_use, tool_result, image…)
with blocks as (
    select * from lake_blocks
),

current_lines as (
    select file_id, epoch, first_line, last_line from int_current_lines
),

final as (
    select blocks.*
    from blocks
    join current_lines
        on current_lines.file_id = blocks.file_id
        and current_lines.epoch = blocks.file_epoch
        and blocks.line_no between current_lines.first_line and current_lines.last_line
)

select * from final
