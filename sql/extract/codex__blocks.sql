-- grain: one row per content block of a Codex record (text, image, thinking, tool_use, tool_result)
-- input: records_batch (the output of codex__records, whose `content` is a typed list of
--        normalized blocks {type, text, call_id, name, input, output, is_error, media_type,
--        data_chars}: unnested as it is, never written out as JSON and parsed back);
--        a web search or image generation call, which carries its own result, has two blocks
with exploded as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        month,
        unnest(content) as b,
        unnest(range(len(content))) as block_index
    from records_batch
    where content is not null
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
        b.name as tool_name,
        b.input as tool_input,
        case when b.type = 'tool_result' then b.output end as output_text,
        b.is_error,
        b.media_type,
        b.data_chars,
        month
    from exploded
)

select * from final
