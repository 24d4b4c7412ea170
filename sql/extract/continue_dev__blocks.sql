-- grain: one row per content block of a Continue history item: its reasoning, its text /
--        image parts (thinking content as thinking blocks), a tool_use per toolCalls[] entry,
--        a tool_result for a `tool` message, the calls and outputs kept only in toolCallStates
--        (when no message carries them), and a conversation summary
-- input: records_batch (the output of continue_dev__records); its `content` is {role, content,
--        toolCalls, toolCallId, status, reasoning, toolCallStates, summary} for history items
with records as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        content ->> '$.role' as role,
        json_extract(content, '$.content') as body,
        json_extract(content, '$.toolCalls') as tool_calls,
        content ->> '$.toolCallId' as tool_call_id,
        content ->> '$.status' as status,
        content ->> '$.reasoning' as reasoning,
        json_extract(content, '$.toolCallStates') as states,
        content ->> '$.summary' as summary
    from records_batch
    where content is not null
),

reasoning_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        0 as grp, 0 as ord,
        'thinking' as block_type, reasoning as text,
        null::varchar as call_id, null::varchar as tool_name, null::json as tool_input,
        null::varchar as output_text, null::boolean as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from records
    where nullif(reasoning, '') is not null
),

string_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        1 as grp, 0 as ord,
        case when role = 'thinking' then 'thinking' else 'text' end as block_type,
        body ->> '$' as text,
        null::varchar as call_id, null::varchar as tool_name, null::json as tool_input,
        null::varchar as output_text, null::boolean as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from records
    where json_type(body) = 'VARCHAR' and body ->> '$' <> '' and role is distinct from 'tool'
),

part_rows_parsed as (
    -- each list parsed once (null unless `body` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(body, '[{"type": "VARCHAR", "text": "VARCHAR",
            "imageUrl": {"url": "VARCHAR"}}]') as body_list
    from records
),

part_rows as (
    select
        * exclude (body_list),
        unnest(body_list) as p,
        generate_subscripts(body_list, 1) - 1 as i
    from part_rows_parsed
    where body_list is not null and role is distinct from 'tool'
),

part_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        1 as grp, i as ord,
        case
            when p.type = 'text' and role = 'thinking' then 'thinking'
            when p.type = 'text' then 'text'
            when p.type = 'imageUrl' then 'image'
            else coalesce(p.type, 'unknown')
        end as block_type,
        p.text as text,
        null::varchar as call_id, null::varchar as tool_name, null::json as tool_input,
        null::varchar as output_text, null::boolean as is_error,
        regexp_extract(p.imageUrl.url, '^data:([^;,]+)', 1) as media_type,
        strlen(p.imageUrl.url) as data_chars
    from part_rows
),

call_rows_parsed as (
    -- each list parsed once (null unless `tool_calls` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(tool_calls, '[{"id": "VARCHAR",
            "function": {"name": "VARCHAR", "arguments": "JSON"}}]') as tool_calls_list
    from records
),

call_rows as (
    select
        *,
        unnest(tool_calls_list) as c,
        generate_subscripts(tool_calls_list, 1) - 1 as i
    from call_rows_parsed
    where tool_calls_list is not null
),

state_rows_parsed as (
    -- each list parsed once (null unless `states` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(states, '[{"toolCallId": "VARCHAR", "status": "VARCHAR",
            "toolCall": {"id": "VARCHAR", "function": {"name": "VARCHAR", "arguments": "JSON"}},
            "output": [{"name": "VARCHAR", "content": "VARCHAR"}],
            "resultInHistory": "BOOLEAN", "callInMessage": "BOOLEAN"}]') as states_list
    from records
),

state_rows as (
    select
        *,
        unnest(states_list) as s,
        generate_subscripts(states_list, 1) - 1 as i
    from state_rows_parsed
    where states_list is not null
),

-- a call is a message's toolCalls[] entry, or a toolCallStates entry no message carries
calls as (
    select source, session_id, file_id, file_epoch, line_no, message_id, month, i,
        c.id as call_id, c.function.name as tool_name, c.function.arguments as arguments
    from call_rows
    union all
    select source, session_id, file_id, file_epoch, line_no, message_id, month, 1000 + i,
        coalesce(s.toolCallId, s.toolCall.id), s.toolCall.function.name, s.toolCall.function.arguments
    from state_rows
    where not coalesce(s.callInMessage, false)
),

call_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        2 as grp, i as ord,
        'tool_use' as block_type, null::varchar as text,
        call_id, tool_name,
        -- OpenAI-style arguments are a JSON document inside a string
        case
            when json_type(arguments) = 'VARCHAR' and json_valid(arguments ->> '$') then json(arguments ->> '$')
            else arguments
        end as tool_input,
        null::varchar as output_text, null::boolean as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from calls
),

result_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        3 as grp, 0 as ord,
        'tool_result' as block_type, null::varchar as text,
        tool_call_id as call_id, null::varchar as tool_name, null::json as tool_input,
        case
            when json_type(body) = 'VARCHAR' then body ->> '$'
            when json_type(body) = 'ARRAY' then array_to_string(list_filter(
                list_transform(json_transform(body, '[{"type": "VARCHAR", "text": "VARCHAR"}]'), lambda x: x.text),
                lambda t: t is not null), chr(10))
        end as output_text,
        coalesce(status in ('errored', 'canceled', 'cancelled'), false) as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from records
    where role = 'tool'

    union all

    -- an output kept only on the assistant item's toolCallStates
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        4 as grp, i as ord,
        'tool_result' as block_type, null::varchar as text,
        coalesce(s.toolCallId, s.toolCall.id) as call_id, s.toolCall.function.name as tool_name,
        null::json as tool_input,
        array_to_string(list_filter(list_transform(s.output, lambda o: o.content), lambda t: t is not null),
            chr(10)) as output_text,
        coalesce(s.status in ('errored', 'canceled', 'cancelled'), false) as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from state_rows
    where not coalesce(s.resultInHistory, false)
        and (s.output is not null or s.status in ('done', 'errored', 'canceled', 'cancelled'))
),

summary_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        5 as grp, 0 as ord,
        'summary' as block_type, summary as text,
        null::varchar as call_id, null::varchar as tool_name, null::json as tool_input,
        null::varchar as output_text, null::boolean as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from records
    where nullif(summary, '') is not null
),

all_blocks as (
    select * from reasoning_blocks
    union all by name
    select * from string_blocks
    union all by name
    select * from part_blocks
    union all by name
    select * from call_blocks
    union all by name
    select * from result_blocks
    union all by name
    select * from summary_blocks
),

final as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        (row_number() over (partition by file_id, line_no order by grp, ord) - 1)::bigint as block_index,
        block_type,
        text,
        call_id,
        tool_name,
        tool_input,
        output_text,
        is_error,
        media_type,
        data_chars,
        month
    from all_blocks
)

select * from final
