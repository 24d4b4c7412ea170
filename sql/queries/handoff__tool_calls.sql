-- grain: one row per tool call of one session, in the order the calls were made
-- parameters: $session_id
select
    call_id,
    message_id,
    tool_name,
    tool_kind,
    path,
    command,
    input,
    output_text,
    is_error,
    exit_code,
    has_result,
    "timestamp"
from tool_calls
where session_id = $session_id
order by "timestamp" nulls last, file_id, line_no, call_id
