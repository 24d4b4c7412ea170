-- grain: one row per content block of a Hermes message: its reasoning, its text or multimodal
--        parts, a tool_use block per tool_calls[] entry, and for a tool row one tool_result
--        block; a tool_use and the tool_result answering it share call_id
-- input: records_batch (the output of hermes__records); its `content` is
--        {role, content, tool_calls, tool_call_id, tool_name, reasoning, finish_reason} for
--        message records, null otherwise
with records as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        content ->> '$.role' as role,
        json_extract(content, '$.content') as body,
        json_extract(content, '$.tool_calls') as tool_calls,
        content ->> '$.tool_call_id' as tool_call_id,
        content ->> '$.tool_name' as tool_name,
        content ->> '$.reasoning' as reasoning,
        content ->> '$.finish_reason' as finish_reason
    from records_batch
    where content is not null
),

reasoning_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        0 as grp, 0 as ord,
        'thinking' as block_type,
        reasoning as text,
        null::varchar as call_id, null::varchar as tool_name, null::json as tool_input,
        null::varchar as output_text, null::boolean as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from records
    where reasoning is not null and role is distinct from 'tool'
),

text_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        1 as grp, 0 as ord,
        'text' as block_type,
        body ->> '$' as text,
        null::varchar as call_id, null::varchar as tool_name, null::json as tool_input,
        null::varchar as output_text, null::boolean as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from records
    where json_type(body) = 'VARCHAR' and body ->> '$' <> ''
        and role not in ('tool', 'function', 'tool_result')
),

part_rows_parsed as (
    -- each list parsed once (null unless `body` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(body, '[{
            "type": "VARCHAR", "text": "VARCHAR",
            "image_url": "JSON", "url": "VARCHAR", "mime_type": "VARCHAR"
        }]') as body_list
    from records
),

part_rows as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        unnest(body_list) as p,
        generate_subscripts(body_list, 1) - 1 as i
    from part_rows_parsed
    where body_list is not null and role not in ('tool', 'function', 'tool_result')
),

part_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        1 as grp, i as ord,
        case
            when p.type in ('text', 'input_text', 'output_text') then 'text'
            when p.type in ('image_url', 'input_image', 'image') then 'image'
            else coalesce(p.type, 'unknown')
        end as block_type,
        p.text as text,
        null::varchar as call_id, null::varchar as tool_name, null::json as tool_input,
        null::varchar as output_text, null::boolean as is_error,
        coalesce(
            p.mime_type,
            regexp_extract(coalesce(p.image_url ->> '$.url', p.image_url ->> '$', p.url), '^data:([^;,]+)', 1)
        ) as media_type,
        strlen(coalesce(p.image_url ->> '$.url', p.image_url ->> '$', p.url)) as data_chars
    from part_rows
),

call_rows_parsed as (
    -- each list parsed once (null unless `tool_calls` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(tool_calls, '[{
            "id": "VARCHAR", "call_id": "VARCHAR", "name": "VARCHAR",
            "function": {"name": "VARCHAR", "arguments": "JSON"}, "arguments": "JSON"
        }]') as tool_calls_list
    from records
),

call_rows as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        unnest(tool_calls_list) as c,
        generate_subscripts(tool_calls_list, 1) - 1 as i
    from call_rows_parsed
    where tool_calls_list is not null
),

call_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        2 as grp, i as ord,
        'tool_use' as block_type,
        null::varchar as text,
        coalesce(c.id, c.call_id) as call_id,
        coalesce(c.function.name, c.name) as tool_name,
        -- OpenAI-style arguments are a JSON document inside a string
        case
            when json_type(coalesce(c.function.arguments, c.arguments)) = 'VARCHAR'
                and json_valid(coalesce(c.function.arguments, c.arguments) ->> '$')
                then json(coalesce(c.function.arguments, c.arguments) ->> '$')
            else coalesce(c.function.arguments, c.arguments)
        end as tool_input,
        null::varchar as output_text, null::boolean as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from call_rows
),

result_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        3 as grp, 0 as ord,
        'tool_result' as block_type,
        null::varchar as text,
        tool_call_id as call_id,
        tool_name,
        null::json as tool_input,
        case
            when json_type(body) = 'VARCHAR' then body ->> '$'
            when json_type(body) = 'ARRAY' then array_to_string(
                list_filter(
                    list_transform(json_transform(body, '[{"type": "VARCHAR", "text": "VARCHAR"}]'),
                        lambda x: x.text),
                    lambda t: t is not null),
                chr(10))
            when body is not null then body::varchar
        end as output_text,
        coalesce(finish_reason = 'error', false) as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from records
    where role in ('tool', 'function', 'tool_result')
),

all_blocks as (
    select * from reasoning_blocks
    union all by name
    select * from text_blocks
    union all by name
    select * from part_blocks
    union all by name
    select * from call_blocks
    union all by name
    select * from result_blocks
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
