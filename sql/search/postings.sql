-- grain: one row per (term, document) of this batch, ordered by term so each Parquet file's
-- zone maps let a lookup skip everything but its terms
-- input: search_docs_batch
with tokens as (
    select source, session_id, file_id, file_epoch, line_no, field, month, unnest(tokens) as term
    from search_docs_batch
),

final as (
    select term, source, session_id, file_id, file_epoch, line_no, field, count(*)::integer as tf, month
    from tokens
    group by all
)

select * from final
order by term, file_id, line_no
