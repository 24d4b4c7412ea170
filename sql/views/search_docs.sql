-- grain: one row per searchable document (a message's text, or one record's tool inputs and
-- outputs) of the current version of every source file, with its length in tokens
with docs as (
    select * from lake_search_docs
),

current_files as (
    select file_id, epoch from int_current_files
),

final as (
    select docs.*
    from docs
    join current_files
        on current_files.file_id = docs.file_id
        and current_files.epoch = docs.file_epoch
)

select * from final
