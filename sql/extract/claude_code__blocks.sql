-- grain: one row per content block of a Claude Code message record
-- input: records_batch (the output of claude_code__records or factory_droid__records, whose
--        `content` column is the message's parsed list of content blocks)
with parsed as (
    -- `content` is the message's block list, already parsed by the records query
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        month,
        content as bl
    from records_batch
    where content is not null
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
