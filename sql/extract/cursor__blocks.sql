-- grain: one row per content block of a Cursor message record
-- input: records_batch (the output of cursor__records, whose `content` is already the
--        normalized block list {type, text, id, name, input, output, is_error, media_type,
--        data_chars}: a desktop bubble's tool call and its result are two blocks there)
with exploded_parsed as (
    -- each list parsed once (null unless `content` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(content, '[{
            "type": "VARCHAR", "text": "VARCHAR", "id": "VARCHAR", "name": "VARCHAR",
            "input": "JSON", "output": "VARCHAR", "is_error": "BOOLEAN",
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
        b.id as call_id,
        b.name as tool_name,
        b.input as tool_input,
        b.output as output_text,
        b.is_error,
        b.media_type,
        b.data_chars,
        month
    from exploded
)

select * from final
