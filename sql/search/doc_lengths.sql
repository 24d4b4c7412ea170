-- grain: one row per searchable document of this batch that has words, with its length in
-- words (for BM25)
-- input: search_words_batch, search_docs_batch
with lengths as (
    select doc_id, sum(tf)::bigint as length
    from search_words_batch
    group by all
),

final as (
    select d.source, d.session_id, d.file_id, d.file_epoch, d.line_no, d.field, d.month,
        l.length
    from search_docs_batch as d
    join lengths as l on l.doc_id = d.doc_id
)

select * from final
