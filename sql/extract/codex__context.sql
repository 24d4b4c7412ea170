-- grain: per file, at most one row for each kind of line whose value codex__records.sql carries
-- forward over the lines after it: the latest turn_context (its model), the latest token_count
-- with token figures (its cumulative total), the latest model output (assistant message)
-- Reads `earlier`: a file's lines already loaded (file_id, line_no, byte_offset, raw,
-- record_type, subtype, role), from the lake or an earlier batch; returns the same columns.
-- The loader hands these rows
-- to the records query of the file's next lines as context it reads and does not emit, so lines
-- appended in a later run (a live session under `watch`), or a file bigger than one batch,
-- count tokens and name models as one whole load does.
with kinds as (
    select
        file_id,
        line_no,
        case
            when record_type = 'turn_context' and coalesce(
                    json_extract_string(raw, '$.payload.model'),
                    json_extract_string(raw, '$.payload.collaboration_mode.settings.model')) is not null
                then 'model'
            when record_type = 'event_msg' and subtype = 'token_count' and coalesce(
                    json_extract_string(raw, '$.payload.info.last_token_usage.input_tokens'),
                    json_extract_string(raw, '$.payload.info.last_token_usage.output_tokens'),
                    json_extract_string(raw, '$.payload.input_tokens'),
                    json_extract_string(raw, '$.payload.output_tokens')) is not null
                then 'usage'
            when record_type = 'response_item' and role = 'assistant' then 'output'
        end as kind
    from earlier
),

-- found on the narrow rows, then joined back: a window over the raw lines would sort them
latest as (
    select file_id, kind, max(line_no) as line_no
    from kinds
    where kind is not null
    group by file_id, kind
)

select e.file_id, e.line_no, e.byte_offset, e.raw, e.record_type, e.subtype, e.role
from latest as l
join earlier as e on e.file_id = l.file_id and e.line_no = l.line_no
order by e.file_id, e.line_no
