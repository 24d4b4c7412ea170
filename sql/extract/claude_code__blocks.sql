-- grain: one row per content block of a Claude Code message record
-- input: records_batch (the output of claude_code__records or factory_droid__records, whose
--        `content` column is the message's parsed list of content blocks, each tool result's
--        content as text: a string as itself, a list of blocks as its JSON)
with parsed as (
    -- `content` is the message's block list, already parsed by the records query. A tool
    -- result's content is a list of blocks or a string that may itself read as one (a command
    -- printing JSON): only where its text parses as a JSON list is the line asked which it
    -- was, at the same place of message.content (a line whose result was made from other
    -- fields has none there, and its text is a string). Messages with no content that
    -- starts like a list (nearly all) skip the question: null, a string everywhere.
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        month,
        content as bl,
        case when list_bool_or(list_transform(content, lambda b: starts_with(b.content, '[')))
            then list_transform(content, lambda b, i:
                b.type = 'tool_result'
                and starts_with(b.content, '[')
                and json_valid(b.content)
                and json_type(raw, '$.message.content[' || (i - 1) || '].content') = 'ARRAY')
        end as content_is_list
    from records_batch
    where content is not null
),

exploded as (
    select
        * exclude (bl, content_is_list),
        unnest(bl) as b,
        unnest(content_is_list) as content_is_list,     -- null for each block where it is
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
            when coalesce(content_is_list, false) then array_to_string(
                list_filter(
                    list_transform(
                        json_transform(b.content, '[{"type": "VARCHAR", "text": "VARCHAR"}]'),
                        lambda x: x.text),
                    lambda t: t is not null),
                chr(10))
            else b.content
        end as output_text,
        b.is_error,
        b.source.media_type as media_type,
        strlen(b.source.data) as data_chars,
        month
    from exploded
)

select * from final
