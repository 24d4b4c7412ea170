-- grain: one row per content block of a Cursor message record
-- input: records_batch (the output of cursor__records, whose `content` is already the
--        normalized block list {type, text, id, name, input, output, is_error, media_type,
--        data_chars}: a desktop bubble's tool call and its result are two blocks there)
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
            "type": "VARCHAR", "text": "VARCHAR", "id": "VARCHAR", "name": "VARCHAR",
            "input": "JSON", "output": "VARCHAR", "is_error": "BOOLEAN",
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
