-- grain: one row per searchable document of this batch: a message's text, or all the tool
-- inputs and outputs of one record (of an output over 8,000 bytes, its first 6,000 and last
-- 2,000 characters; 20,000 characters per record at most)
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
        left(string_agg(concat_ws(chr(10), tool_name, left(tool_input::varchar, 5000),
                                  -- a long output's head says what ran, its tail how it ended
                                  case when strlen(output_text) > 8000
                                      then left(output_text, 6000) || ' … ' || right(output_text, 2000)
                                      else output_text end),
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
