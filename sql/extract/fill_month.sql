-- grain: updates records_batch in place; rows are unchanged in number
-- A record with no time of its own (titles, summaries, snapshots) is filed under the earliest
-- month of its file in this batch, or 'unknown' when the file has no time at all. Done here,
-- once, over two narrow columns, instead of a window over every adapter's wide rows.
update records_batch as r
set month = coalesce(f.month, 'unknown')
from (
    select file_id, strftime(min("timestamp"), '%Y-%m') as month
    from records_batch
    group by file_id
) as f
where r.month is null and r.file_id = f.file_id
