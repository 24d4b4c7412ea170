-- grain: one row per content block of a record whose extraction SQL already normalized its
--        blocks (OpenHands, Antigravity, Grok Build, grok-cli): text, thinking, image,
--        tool_use, tool_result; a call's tool_use and its result's tool_result share call_id
-- input: records_batch, whose `content` is a JSON array of normalized blocks {type, text,
--        call_id, tool_name, tool_input, output_text, is_error, media_type, data_chars}
with exploded as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        month,
        unnest(json_transform(content, '[{
            "type": "VARCHAR", "text": "VARCHAR", "call_id": "VARCHAR", "tool_name": "VARCHAR",
            "tool_input": "JSON", "output_text": "VARCHAR", "is_error": "BOOLEAN",
            "media_type": "VARCHAR", "data_chars": "BIGINT"
        }]')) as b,
        unnest(range(json_array_length(content)::bigint)) as block_index
    from records_batch
    where json_type(content) = 'ARRAY'
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
        coalesce(b.type, 'unknown') as block_type,
        b.text,
        b.call_id,
        b.tool_name,
        b.tool_input,
        b.output_text,
        b.is_error,
        b.media_type,
        b.data_chars,
        month
    from exploded
)

select * from final
