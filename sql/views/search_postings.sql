-- grain: one row per (term, document) of the current version of every source file: the
-- inverted index behind `convarch search`
with postings as (
    select * from lake_postings
),

current_files as (
    select file_id, epoch from int_current_files
),

final as (
    select postings.*
    from postings
    join current_files
        on current_files.file_id = postings.file_id
        and current_files.epoch = postings.file_epoch
)

select * from final
