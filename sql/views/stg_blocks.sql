-- grain: one row per content block of a current record (text, thinking, tool_use, tool_result, image…)
with blocks as (
    select * from lake_blocks
),

current_files as (
    select file_id, epoch from int_current_files
),

final as (
    select blocks.*
    from blocks
    join current_files
        on current_files.file_id = blocks.file_id
        and current_files.epoch = blocks.file_epoch
)

select * from final
