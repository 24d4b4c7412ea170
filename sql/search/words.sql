-- grain: one row per (document, distinct word as written) of this batch, with its count
-- input: search_tokens_batch(doc_id, word): each word occurrence of search_docs_batch, cut by
--        etl/tokens.py with the search_tokens macro's rule (runs of ASCII letters, digits and
--        underscores); the case-folding and identifier splitting happen once per distinct
--        word, in postings.
with final as (
    select doc_id, word, count(*)::integer as tf
    from search_tokens_batch
    group by all
)

select * from final
