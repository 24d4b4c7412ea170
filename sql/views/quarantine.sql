-- grain: one row per input that could not be loaded: a bad line of a current source file, or
-- the incomplete last line of a file (kept pending: it loads once the agent finishes writing it)
with bad_lines as (
    select
        q.source,  -- agent the row comes from (claude_code, codex, ...; `convarch sources` lists them all)
        q.source_file,  -- path of the file that held the line
        q.line_no,  -- line (1-based) in source_file
        q.byte_offset,  -- byte offset of the line in source_file
        q.reason,  -- why it was not loaded: invalid_json, not_object, invalid_utf8, malformed_row, too_large, ..., or truncated_tail for a pending incomplete last line
        q.error,  -- the parser's message
        q.raw_text,  -- the line as read (null for a pending tail)
        q.ingest_run_id  -- the ingest run that set the line aside
    from lake_quarantine as q
    join int_current_lines as f
        on f.file_id = q.file_id
        and f.epoch = q.file_epoch
        and q.line_no between f.first_line and f.last_line
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
