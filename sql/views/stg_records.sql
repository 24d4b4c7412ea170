-- grain: one row per physical record of the current version of every source file
-- A rewritten source file gets a new epoch; rows of older epochs stay in Parquet (the archive
-- never loses them) but only the current epoch is part of the live warehouse.
with records as (
    select * from lake_records
),

current_files as (
    select file_id, epoch from int_current_files
),

final as (
    select records.*
    from records
    join current_files
        on current_files.file_id = records.file_id
        and current_files.epoch = records.file_epoch
)

select * from final
