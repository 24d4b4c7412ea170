-- grain: one row per content block of a Gemini CLI message record: its thoughts, its content parts,
--        and for each toolCalls[] entry a tool_use block and (once it has one) a tool_result block
-- input: records_batch (the output of gemini_cli__records); its `content` is
--        {"parts": [Part...], "thoughts": [...], "toolCalls": [...]} for every message that is
--        not a superseded version, null otherwise
-- Memory: DuckDB holds a few times each vector's bytes per operator, and tool output is most of
-- a batch's bytes, so copies of it are kept few. The records query hands each message's content
-- over parsed, as typed lists, each unnested beside its subscripts (a second unnest of
-- range(json_array_length(...)) parsed the JSON again inside the unnest); `records` is read
-- three times but never materialized (its copy of every message's content, beside the three
-- readers', ran a worker out of memory on 16 MB of a session's lines); `call_outputs`, read
-- twice, is materialized once it holds only what the blocks need.
with records as not materialized (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        content as msg
    from records_batch
    where content is not null
),

thought_rows as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        unnest(msg.thoughts) as t,
        generate_subscripts(msg.thoughts, 1) - 1 as i
    from records
    where msg.thoughts is not null
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
        unnest(msg.parts) as p,
        generate_subscripts(msg.parts, 1) - 1 as i
    from records
    where msg.parts is not null
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
        unnest(msg.toolCalls) as c,
        generate_subscripts(msg.toolCalls, 1) - 1 as i
    from records
    where msg.toolCalls is not null
),

-- a call's result: PartListUnion, normally [{"functionResponse": {"id", "name", "response"}}],
-- else one Part or a string. Each part is parsed once for its text and response, the response
-- once more for its output and error (kept as JSON, so a string is told from the rest); a JSON
-- null output or error counts as none, as Gemini CLI never writes one. Each step keeps only
-- what the next needs.
call_results as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month, i,
        c.id as call_id,
        c.name as tool_name,
        c.args as tool_input,
        c.status,
        list_transform(
            case
                when starts_with(c.result, '[') then json_transform(c.result, '["JSON"]')
                when starts_with(c.result, '{') or starts_with(c.result, '"') then [c.result]
            end,
            lambda r: {
                'part': r,
                'f': json_transform(r, '{"text": "JSON", "functionResponse": {"response": "JSON"}}')
            }) as parts
    from call_rows
),

call_responses as (
    select
        * exclude (parts),
        list_transform(parts, lambda x: {
            'part': x.part,
            'text': x.f.text,
            'response': x.f.functionResponse.response,
            'r': json_transform(x.f.functionResponse.response, '{"output": "JSON", "error": "JSON"}')
        }) as result_parts
    from call_results
),

call_outputs as materialized (
    select
        * exclude (result_parts),
        result_parts is not null as has_result,
        nullif(array_to_string(list_filter(list_transform(result_parts, lambda x: case
            when starts_with(x.r.output, '"') then json_extract_string(x.r.output, '$')
            when x.r.output is not null then x.r.output::varchar
            when starts_with(x.r.error, '"') then json_extract_string(x.r.error, '$')
            when starts_with(x.text, '"') then json_extract_string(x.text, '$')
            when starts_with(x.part, '"') then json_extract_string(x.part, '$')
            when x.response is not null then x.response::varchar
        end), lambda o: o is not null), chr(10)), '') as output_text,
        coalesce(len(list_filter(result_parts, lambda x: x.r.error is not null)), 0) > 0 as has_error
    from call_responses
),

call_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        2 as grp,
        i * 2 as ord,
        'tool_use' as block_type,
        null::varchar as text,
        call_id,
        tool_name,
        tool_input,
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
        call_id,
        tool_name,
        null::json as tool_input,
        output_text,
        coalesce(status in ('error', 'cancelled'), false) or has_error as is_error,
        null::varchar as media_type,
        null::bigint as data_chars
    from call_outputs
    where has_result
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
