-- grain: one row per searchable document of this batch: a message's text, or all the tool
-- inputs and outputs of one record; with its tokens
-- input: records_batch, blocks_batch
with message_docs as (
    select source, session_id, file_id, file_epoch, line_no, 'message' as field, text as body, month
    from records_batch
    where role is not null and text is not null and length(text) > 0
),

tool_docs as (
    select
        source, session_id, file_id, file_epoch, line_no, 'tool' as field,
        string_agg(concat_ws(chr(10), tool_name, tool_input::varchar, output_text), chr(10)
                   order by block_index) as body,
        any_value(month) as month
    from blocks_batch
    where block_type in ('tool_use', 'server_tool_use', 'tool_result')
    group by source, session_id, file_id, file_epoch, line_no
),

docs as (
    select * from message_docs
    union all
    select * from tool_docs
),

final as (
    select
        source, session_id, file_id, file_epoch, line_no, field, month,
        search_tokens(body) as tokens
    from docs
)

select * from final
