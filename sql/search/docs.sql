-- grain: one row per searchable document of this batch: a message's text, or all the tool
-- inputs and outputs of one record (the first 20,000 characters of them)
-- input: records_batch, blocks_batch
-- doc_id numbers the documents within the batch, so tokenizing carries one integer per word
-- instead of the document's whole key
with message_docs as (
    select source, session_id, file_id, file_epoch, line_no, 'message' as field,
        left(text, 100000) as body, month
    from records_batch
    where role is not null and text is not null and length(text) > 0
),

tool_docs as (
    select
        source, session_id, file_id, file_epoch, line_no, 'tool' as field,
        left(string_agg(concat_ws(chr(10), tool_name, left(tool_input::varchar, 5000), left(output_text, 20000)),
                        chr(10) order by block_index), 20000) as body,
        any_value(month) as month
    from blocks_batch
    where block_type in ('tool_use', 'server_tool_use', 'tool_result')
    group by source, session_id, file_id, file_epoch, line_no
),

all_docs as (
    select * from message_docs
    union all
    select * from tool_docs
),

final as (
    select row_number() over () as doc_id, * from all_docs
)

select * from final
