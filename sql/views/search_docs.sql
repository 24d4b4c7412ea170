-- grain: one row per searchable document (a message's text, or one record's tool inputs and
-- outputs) of the current version of every source file, with its length in tokens
with docs as (
    select * from lake_search_docs
),

current_lines as (
    select file_id, epoch, first_line, last_line from int_current_lines
),

final as (
    select docs.*
    from docs
    join current_lines
        on current_lines.file_id = docs.file_id
        and current_lines.epoch = docs.file_epoch
        and docs.line_no between current_lines.first_line and current_lines.last_line
)

select * from final
