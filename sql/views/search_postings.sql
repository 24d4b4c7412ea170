-- grain: one row per (term, document) of the current version of every source file: the
-- inverted index behind `convarch search`
with postings as (
    select * from lake_postings
),

current_lines as (
    select file_id, epoch, first_line, last_line from int_current_lines
),

final as (
    select postings.*
    from postings
    join current_lines
        on current_lines.file_id = postings.file_id
        and current_lines.epoch = postings.file_epoch
        and postings.line_no between current_lines.first_line and current_lines.last_line
)

select * from final
