-- grain: one row per (document, distinct word as written) of this batch, with its count
-- input: search_docs_batch
-- Tokens are runs of ASCII letters, digits and underscores (the search_tokens macro's rule);
-- the case-folding and identifier splitting happen once per distinct word, in postings.
with words as (
    select doc_id, unnest(regexp_extract_all(body, '[A-Za-z0-9_]+')) as word
    from search_docs_batch
),

final as (
    select doc_id, word, count(*)::integer as tf
    from words
    group by all
)

select * from final
