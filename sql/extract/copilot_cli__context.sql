-- grain: per file, each assistant.message line whose tool requests no tool.execution_start
-- has answered yet
-- Reads `earlier`: a file's lines already loaded (file_id, line_no, byte_offset, raw,
-- record_type, subtype, role), from the lake or an earlier batch; returns the same columns.
-- copilot_cli__records.sql makes a tool.execution_start a call of its own only when no request
-- of the file names it. Copilot writes the request first and the start a moment later, so a
-- run (or a batch) can end between the two: the loader hands these lines to the records query
-- of the file's next lines as context it reads and does not emit, and the start is then one
-- call with its request, as a whole load of the file makes it.
with requests as (
    select file_id, line_no, unnest(json_extract_string(raw, '$.data.toolRequests[*].toolCallId')) as call_id
    from earlier
    where record_type = 'assistant.message'
),

started as (
    select distinct file_id, json_extract_string(raw, '$.data.toolCallId') as call_id
    from earlier
    where record_type = 'tool.execution_start'
),

waiting as (
    select distinct r.file_id, r.line_no
    from requests as r
    anti join started as s
        on s.file_id = r.file_id
        and s.call_id = r.call_id
    where r.call_id is not null
)

select e.file_id, e.line_no, e.byte_offset, e.raw, e.record_type, e.subtype, e.role
from earlier as e
semi join waiting as w
    on w.file_id = e.file_id
    and w.line_no = e.line_no
order by e.file_id, e.line_no
