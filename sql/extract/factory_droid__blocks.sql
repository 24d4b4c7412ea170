-- grain: one row per content block of a Factory droid message record (Claude-style blocks; stream-json
--        records arrive here already shaped as such blocks)
-- input: records_batch (the output of factory_droid__records, with its `content` column)
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
            "type": "VARCHAR", "text": "VARCHAR", "thinking": "VARCHAR",
            "id": "VARCHAR", "name": "VARCHAR", "input": "JSON",
            "tool_use_id": "VARCHAR", "content": "JSON", "is_error": "BOOLEAN",
            "source": {"media_type": "VARCHAR", "data": "VARCHAR"}
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
        case b.type
            when 'text' then b.text
            when 'thinking' then b.thinking
        end as text,
        coalesce(b.id, b.tool_use_id) as call_id,
        b.name as tool_name,
        b.input as tool_input,
        case
            when b.type <> 'tool_result' then null
            when json_type(b.content) = 'VARCHAR' then b.content ->> '$'
            when json_type(b.content) = 'ARRAY' then array_to_string(
                list_filter(
                    list_transform(
                        json_transform(b.content, '[{"type": "VARCHAR", "text": "VARCHAR"}]'),
                        lambda x: x.text),
                    lambda t: t is not null),
                chr(10))
        end as output_text,
        b.is_error,
        b.source.media_type as media_type,
        strlen(b.source.data) as data_chars,
        month
    from exploded
)

select * from final
