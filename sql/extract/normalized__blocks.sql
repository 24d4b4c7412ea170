-- grain: one row per content block of a record whose extraction SQL already normalized its
--        blocks (OpenHands, Antigravity, Grok Build, grok-cli): text, thinking, image,
--        tool_use, tool_result; a call's tool_use and its result's tool_result share call_id
-- input: records_batch, whose `content` is a JSON array of normalized blocks {type, text,
--        call_id, tool_name, tool_input, output_text, is_error, media_type, data_chars}
with exploded_parsed as (
    -- each list parsed once (null unless `content` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(content, '[{
            "type": "VARCHAR", "text": "VARCHAR", "call_id": "VARCHAR", "tool_name": "VARCHAR",
            "tool_input": "JSON", "output_text": "VARCHAR", "is_error": "BOOLEAN",
            "media_type": "VARCHAR", "data_chars": "BIGINT"
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
