-- grain: one row per tool call (a tool_use block), with its result matched by call id within
-- the same session; calls that never got a result have a null output
with blocks as (
    select * from stg_blocks
),

calls as (
    select *
    from blocks
    where block_type in ('tool_use', 'server_tool_use') and call_id is not null
    qualify row_number() over (partition by source, session_id, call_id order by file_id, line_no) = 1
),

results as (
    select *
    from blocks
    where block_type = 'tool_result' and call_id is not null
    qualify row_number() over (
        partition by source, session_id, call_id order by file_id desc, line_no desc
    ) = 1
),

final as (
    select
        calls.session_id,
        calls.message_id,
        calls.call_id,
        calls.tool_name,
        calls.tool_input as input,
        results.output_text,
        coalesce(results.is_error, false) as is_error,
        calls.source,
        results.message_id as result_message_id,
        results.call_id is not null as has_result,
        calls.file_id,
        calls.line_no
    from calls
    left join results
        on results.source = calls.source
        and results.session_id = calls.session_id
        and results.call_id = calls.call_id
)

select * from final
