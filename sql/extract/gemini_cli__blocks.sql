-- grain: one row per content block of a Gemini CLI message record: its thoughts, its content parts,
--        and for each toolCalls[] entry a tool_use block and (once it has one) a tool_result block
-- input: records_batch (the output of gemini_cli__records); its `content` is
--        {"parts": [Part...], "thoughts": [...], "toolCalls": [...]} for every message that is
--        not a superseded version, null otherwise
with records as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        json_extract(content, '$.parts') as parts,
        json_extract(content, '$.thoughts') as thoughts,
        json_extract(content, '$.toolCalls') as tool_calls
    from records_batch
    where content is not null
),

thought_rows as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        unnest(json_transform(thoughts, '[{"subject": "VARCHAR", "description": "VARCHAR"}]')) as t,
        unnest(range(json_array_length(thoughts)::bigint)) as i
    from records
    where json_type(thoughts) = 'ARRAY'
),

thought_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        0 as grp,
        i as ord,
        'thinking' as block_type,
        nullif(concat_ws(chr(10), t.subject, t.description), '') as text,
        null::varchar as call_id,
        null::varchar as tool_name,
        null::json as tool_input,
        null::varchar as output_text,
        null::boolean as is_error,
        null::varchar as media_type,
        null::bigint as data_chars
    from thought_rows
),

part_rows as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        unnest(json_transform(parts, '[{
            "text": "VARCHAR", "thought": "BOOLEAN",
            "functionCall": {"id": "VARCHAR", "name": "VARCHAR", "args": "JSON"},
            "functionResponse": {"id": "VARCHAR", "name": "VARCHAR", "response": "JSON"},
            "inlineData": {"mimeType": "VARCHAR", "data": "VARCHAR"},
            "fileData": {"mimeType": "VARCHAR", "fileUri": "VARCHAR"},
            "executableCode": "JSON", "codeExecutionResult": "JSON"
        }]')) as p,
        unnest(range(json_array_length(parts)::bigint)) as i
    from records
    where json_type(parts) = 'ARRAY'
),

part_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        1 as grp,
        i as ord,
        case
            when p.functionCall is not null then 'tool_use'
            when p.functionResponse is not null then 'tool_result'
            when p.inlineData is not null and p.inlineData.mimeType like 'image/%' then 'image'
            when p.inlineData is not null then 'inline_data'
            when p.fileData is not null then 'file'
            when p.executableCode is not null then 'code'
            when p.codeExecutionResult is not null then 'code_result'
            when coalesce(p.thought, false) then 'thinking'
            when p.text is not null then 'text'
            else 'unknown'
        end as block_type,
        case when p.fileData is not null then p.fileData.fileUri else p.text end as text,
        coalesce(p.functionCall.id, p.functionResponse.id) as call_id,
        coalesce(p.functionCall.name, p.functionResponse.name) as tool_name,
        p.functionCall.args as tool_input,
        case
            when p.functionResponse is null then null
            when json_type(json_extract(p.functionResponse.response, '$.output')) = 'VARCHAR'
                then json_extract_string(p.functionResponse.response, '$.output')
            when json_type(json_extract(p.functionResponse.response, '$.error')) = 'VARCHAR'
                then json_extract_string(p.functionResponse.response, '$.error')
            when json_type(p.functionResponse.response) = 'VARCHAR'
                then json_extract_string(p.functionResponse.response, '$')
            else p.functionResponse.response::varchar
        end as output_text,
        case
            when p.functionResponse is null then null
            else json_extract(p.functionResponse.response, '$.error') is not null
        end as is_error,
        coalesce(p.inlineData.mimeType, p.fileData.mimeType) as media_type,
        strlen(p.inlineData.data) as data_chars
    from part_rows
),

call_rows as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        unnest(json_transform(tool_calls, '[{
            "id": "VARCHAR", "name": "VARCHAR", "args": "JSON",
            "result": "JSON", "status": "VARCHAR"
        }]')) as c,
        unnest(range(json_array_length(tool_calls)::bigint)) as i
    from records
    where json_type(tool_calls) = 'ARRAY'
),

-- a call's result: PartListUnion, normally [{"functionResponse": {"id", "name", "response"}}]
call_results as (
    select
        *,
        case json_type(c.result)
            when 'VARCHAR' then [json_object('text', json_extract_string(c.result, '$'))]
            when 'ARRAY' then json_extract(c.result, '$[*]')
            when 'OBJECT' then [c.result]
        end as result_parts
    from call_rows
),

call_outputs as (
    select
        *,
        list_transform(result_parts, lambda r: case
            when json_type(json_extract(r, '$.functionResponse.response.output')) = 'VARCHAR'
                then json_extract_string(r, '$.functionResponse.response.output')
            when json_extract(r, '$.functionResponse.response.output') is not null
                then json_extract(r, '$.functionResponse.response.output')::varchar
            when json_type(json_extract(r, '$.functionResponse.response.error')) = 'VARCHAR'
                then json_extract_string(r, '$.functionResponse.response.error')
            when json_type(json_extract(r, '$.text')) = 'VARCHAR'
                then json_extract_string(r, '$.text')
            when json_type(r) = 'VARCHAR' then json_extract_string(r, '$')
            when json_extract(r, '$.functionResponse.response') is not null
                then json_extract(r, '$.functionResponse.response')::varchar
        end) as outputs,
        list_filter(result_parts, lambda r:
            json_extract(r, '$.functionResponse.response.error') is not null) as errors
    from call_results
),

call_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        2 as grp,
        i * 2 as ord,
        'tool_use' as block_type,
        null::varchar as text,
        c.id as call_id,
        c.name as tool_name,
        c.args as tool_input,
        null::varchar as output_text,
        null::boolean as is_error,
        null::varchar as media_type,
        null::bigint as data_chars
    from call_outputs

    union all

    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        2 as grp,
        i * 2 + 1 as ord,
        'tool_result' as block_type,
        null::varchar as text,
        c.id as call_id,
        c.name as tool_name,
        null::json as tool_input,
        nullif(array_to_string(list_filter(outputs, lambda o: o is not null), chr(10)), '') as output_text,
        coalesce(c.status in ('error', 'cancelled'), false) or len(errors) > 0 as is_error,
        null::varchar as media_type,
        null::bigint as data_chars
    from call_outputs
    where result_parts is not null
),

all_blocks as (
    select * from thought_blocks
    union all by name
    select * from part_blocks
    union all by name
    select * from call_blocks
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
