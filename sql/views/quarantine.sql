-- grain: one row per input that could not be loaded: a bad line of a current source file, or
-- the incomplete last line of a file (kept pending: it loads once the agent finishes writing it)
with bad_lines as (
    select
        q.source,
        q.source_file,
        q.line_no,
        q.byte_offset,
        q.reason,
        q.error,
        q.raw_text,
        q.ingest_run_id
    from lake_quarantine as q
    join int_current_files as f
        on f.file_id = q.file_id
        and f.epoch = q.file_epoch
),

pending_tails as (
    select
        source,
        path as source_file,
        lines_read + 1 as line_no,
        "offset" as byte_offset,
        'truncated_tail' as reason,
        'incomplete last line (' || tail_bytes || ' bytes without a newline); it loads when completed'
            as error,
        null as raw_text,
        last_run_id as ingest_run_id
    from source_files
    where tail_bytes > 0 and not gone
),

final as (
    select * from bad_lines
    union all by name
    select * from pending_tails
)

select * from final
