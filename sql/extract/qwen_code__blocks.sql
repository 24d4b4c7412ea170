-- grain: one row per part of a Qwen Code record's message (text, thinking, tool_use, tool_result, image…)
-- input: records_batch (the output of qwen_code__records); its `content` is
--        {parts: [Part...] (parsed), callId: toolCallResult.callId, status: toolCallResult.status}
with records as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        content.parts as parts_list,      -- parsed by the records query
        content.callId as result_call_id,
        content.status as result_status
    from records_batch
    where content is not null
),

part_rows as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        result_call_id,
        result_status,
        unnest(parts_list) as p,
        generate_subscripts(parts_list, 1) - 1 as block_index
    from records
    where parts_list is not null
),

final as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        block_index,
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
        case
            when p.functionCall is not null then p.functionCall.id
            when p.functionResponse is not null then coalesce(p.functionResponse.id, result_call_id)
        end as call_id,
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
                or coalesce(result_status in ('error', 'cancelled'), false)
        end as is_error,
        coalesce(p.inlineData.mimeType, p.fileData.mimeType) as media_type,
        strlen(p.inlineData.data) as data_chars,
        month
    from part_rows
)

select * from final
