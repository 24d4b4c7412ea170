-- grain: one row per (term, document) of this batch. Terms are made exactly as the
-- search_tokens macro makes them (whole lowercased words, plus the parts of code identifiers),
-- but once per distinct word of the batch and then joined to the counts, which DuckDB does far
-- faster than nested list lambdas over every token. The session is not repeated on every
-- posting: a hit takes it from its document (search_docs).
-- Not sorted here: a batch's postings hold every term, so a sorted batch still spans them
-- all; the worker holds postings across batches and writes them in runs sorted by term
-- (etl/partfiles.py), and merging sorts them again (etl/compact.py).
-- input: search_words_batch, search_docs_batch
with vocabulary as (
    select distinct word from search_words_batch
),

whole as (
    select word, lower(word) as term
    from vocabulary
    where length(word) <= 64
),

parts as (
    select word,
        unnest(string_split(lower(regexp_replace(
            regexp_replace(word, '([a-z0-9])([A-Z])', '\1_\2', 'g'),
            '([A-Z]+)([A-Z][a-z])', '\1_\2', 'g')), '_')) as term
    from vocabulary
    where regexp_matches(word, '[A-Z_]')
),

word_terms as (
    select word, term from whole
    union all
    select word, term
    from parts
    where term <> lower(word) and length(term) between 1 and 64
),

doc_terms as (
    select w.doc_id, t.term, sum(w.tf)::integer as tf
    from search_words_batch as w
    join word_terms as t on t.word = w.word
    group by all
),

final as (
    select t.term, d.source, d.file_id, d.file_epoch, d.line_no, d.field, t.tf, d.month
    from doc_terms as t
    join search_docs_batch as d on d.doc_id = t.doc_id
)

select * from final
