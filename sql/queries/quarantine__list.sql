-- grain: one row per input that could not be loaded, newest run first
-- parameters: $source (or null), $reason (or null), $limit
select
    source,
    reason,
    source_file,
    line_no,
    byte_offset,
    error,
    left(raw_text, 200) as raw_preview,
    ingest_run_id
from quarantine
where ($source is null or source = $source)
    and ($reason is null or reason = $reason)
order by ingest_run_id desc, source_file, line_no
limit $limit
