-- grain: one row per content block of a Claude Code message record
-- input: records_batch (the output of claude_code__records, with its `content` column)
with parsed as (
    -- content is minified JSON, so its first character tells an array; each is parsed once
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        month,
        json_transform(content, '[{
            "type": "VARCHAR", "text": "VARCHAR", "thinking": "VARCHAR",
            "id": "VARCHAR", "name": "VARCHAR", "input": "JSON",
            "tool_use_id": "VARCHAR", "content": "JSON", "is_error": "BOOLEAN",
            "source": {"media_type": "VARCHAR", "data": "VARCHAR"}
        }]') as bl
    from records_batch
    where starts_with(content, '[')
),

exploded as (
    select
        * exclude (bl),
        unnest(bl) as b,
        unnest(range(len(bl))) as block_index
    from parsed
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
            when starts_with(b.content, '"') then b.content ->> '$'
            when starts_with(b.content, '[') then array_to_string(
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
