-- grain: one row per tool call of one session, in the order the calls were made, each marked
-- whether it is part of the conversation a resume continues (on_branch): a call made on the
-- rebuilt chain, or by a subagent on its side chain, or, in a session without a chain, any
-- call except one on a branch left where the source keeps a tree (live_path).
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

-- sources that keep a tree: a call's record off the path the agent replays is on a branch left
live as (
    select file_id, line_no, on_path
    from live_path([$session_id])
),

final as (
    select
        calls.*,
        case
            when exists (select 1 from chain) then coalesce(
                calls.message_id in (select message_id from chain)
                    or calls.message_id in (select message_id from side_chain),
                false
            )
            else coalesce(live.on_path, true)
        end as on_branch
    from calls
    left join live using (file_id, line_no)
)

select * exclude (file_id, line_no)
from final
order by "timestamp" nulls last, file_id, line_no, call_id
