-- grain: one row per tool call of one session, in the order the calls were made, each marked
-- whether it is part of the conversation a resume continues (on_branch): a call made on the
-- rebuilt chain, or by a subagent on its side chain, or any call of a session without a chain.
-- A call on a branch the person left (a rewind, a fork) is not: the work there was abandoned,
-- and its failures are not what the next agent should take up.
-- parameters: $session_id
with calls as (
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
        "timestamp",
        file_id,
        line_no
    from tool_calls
    where session_id = $session_id
),

chain as (
    select distinct message_id
    from chain_messages
    where session_id = $session_id
),

side_chain as (
    select distinct message_id
    from messages
    where session_id = $session_id
        and is_sidechain
),

final as (
    select
        calls.*,
        coalesce(
            not exists (select 1 from chain)
                or calls.message_id in (select message_id from chain)
                or calls.message_id in (select message_id from side_chain),
            false
        ) as on_branch
    from calls
)

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
    "timestamp",
    on_branch
from final
order by "timestamp" nulls last, file_id, line_no, call_id
