-- grain: one row per (file, session) with records that a file whose tail was replaced keeps:
-- how many it keeps, and from which line
-- input: lake_records (the lake's records: file_id, file_epoch, line_no, session_id),
--        kept_rows(file_id, new_epoch, epoch, first_line, last_line): the loads the new
--        version keeps
with final as (
    select
        r.file_id,
        r.session_id,
        count(*) as kept_records,
        min(r.line_no) as first_kept_line
    from lake_records as r
    join kept_rows as k
        on k.file_id = r.file_id
        and k.epoch = r.file_epoch
        and r.line_no between k.first_line and k.last_line
    group by r.file_id, r.session_id
)

select * from final
