-- grain: one row per content block of an aider message: its text as one block ('text' for
--        the person's input and the reply, 'tool_output' for aider's own > lines); aider logs
--        no structured tool calls (edits are SEARCH/REPLACE blocks inside the reply text)
-- input: records_batch (the output of aider__records); its `content` is {type, text}
with final as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        0::bigint as block_index,
        case when content ->> '$.type' = 'tool_output' then 'tool_output' else 'text' end as block_type,
        content ->> '$.text' as text,
        null::varchar as call_id,
        null::varchar as tool_name,
        null::json as tool_input,
        null::varchar as output_text,
        null::boolean as is_error,
        null::varchar as media_type,
        null::bigint as data_chars,
        month
    from records_batch
    where content is not null
)

select * from final
