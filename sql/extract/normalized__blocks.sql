-- grain: one row per content block of a record whose extraction SQL already normalized its
--        blocks (OpenHands, Antigravity, Grok Build, grok-cli): text, thinking, image,
--        tool_use, tool_result; a call's tool_use and its result's tool_result share call_id
-- input: records_batch, whose `content` is a list of normalized blocks, each a JSON object
--        {type, text, call_id, tool_name, tool_input, output_text, is_error, media_type,
--        data_chars} built by the records query (not stored: raw keeps every byte)
with exploded as (
    -- the list is unnested beside its subscripts and each block parsed once, alone: the
    -- records query writing the list out as one JSON document for this query to parse back
    -- held a batch's tool output several times over and ran a worker out of memory
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        month,
        unnest(content) as block_json,
        generate_subscripts(content, 1) - 1 as block_index
    from records_batch
    where content is not null
),

parsed as (
    select
        * exclude (block_json),
        json_transform(block_json, '{
            "type": "VARCHAR", "text": "VARCHAR", "call_id": "VARCHAR", "tool_name": "VARCHAR",
            "tool_input": "JSON", "output_text": "VARCHAR", "is_error": "BOOLEAN",
            "media_type": "VARCHAR", "data_chars": "BIGINT"
        }') as b
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
    from parsed
)

select * from final
