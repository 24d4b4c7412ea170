-- grain: one row per MessageContent item of a goose message (text, toolRequest, toolResponse,
--        thinking, image, …); a toolRequest and the toolResponse answering it share `id`
-- input: records_batch (the output of goose__records, with its `content` column)
with exploded_parsed as (
    -- each list parsed once (null unless `content` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(content, '[{
            "type": "VARCHAR", "text": "VARCHAR", "thinking": "VARCHAR", "msg": "VARCHAR",
            "data": "VARCHAR", "mimeType": "VARCHAR", "id": "VARCHAR",
            "toolCall": {"status": "VARCHAR", "value": {"name": "VARCHAR", "arguments": "JSON"},
                         "error": "JSON"},
            "toolResult": {"status": "VARCHAR", "value": "JSON", "error": "JSON"}
        }]') as content_list
    from records_batch
),

exploded as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        month,
        unnest(content_list) as b,
        generate_subscripts(content_list, 1) - 1 as block_index
    from exploded_parsed
    where content_list is not null
),

results as (
    select
        *,
        -- a tool result is a list of MCP Content, or (goose ≥ 1.48) {content: [...], isError}
        case
            when json_type(b.toolResult.value) = 'ARRAY' then b.toolResult.value
            when json_type(b.toolResult.value) = 'OBJECT' then b.toolResult.value -> '$.content'
        end as result_items,
        case
            when json_type(b.toolResult.value) = 'OBJECT'
                then try_cast(b.toolResult.value ->> '$.isError' as boolean)
        end as result_is_error
    from exploded
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
            when b.type is null then 'unknown'
            when b.type in ('toolRequest', 'frontendToolRequest') then 'tool_use'
            when b.type = 'toolResponse' then 'tool_result'
            else lower(regexp_replace(b.type, '([a-z0-9])([A-Z])', '\1_\2', 'g'))
        end as block_type,
        case
            when b.type in ('text', 'reasoning') then b.text
            when b.type = 'thinking' then b.thinking
            when b.type = 'systemNotification' then b.msg
        end as text,
        case when b.type in ('toolRequest', 'frontendToolRequest', 'toolResponse') then b.id end
            as call_id,
        b.toolCall.value.name as tool_name,
        b.toolCall.value.arguments as tool_input,
        case
            when b.type <> 'toolResponse' then null
            when b.toolResult.status = 'error' then
                case when json_type(b.toolResult.error) = 'VARCHAR' then b.toolResult.error ->> '$'
                    else b.toolResult.error::varchar end
            when json_type(result_items) = 'ARRAY' then array_to_string(
                list_filter(
                    list_transform(
                        json_transform(result_items,
                            '[{"type": "VARCHAR", "text": "VARCHAR", "resource": {"text": "VARCHAR"}}]'),
                        lambda x: coalesce(x.text, x.resource.text)),
                    lambda t: t is not null),
                chr(10))
        end as output_text,
        case
            when b.type = 'toolResponse'
                then coalesce(b.toolResult.status = 'error', false) or coalesce(result_is_error, false)
            when b.type in ('toolRequest', 'frontendToolRequest') then b.toolCall.status = 'error'
        end as is_error,
        b.mimeType as media_type,
        strlen(b.data) as data_chars,
        month
    from results
)

select * from final
