-- grain: one row per (term, document) of this batch, ordered by term so each Parquet file's
-- zone maps let a lookup skip everything but its terms. Terms are made exactly as the
-- search_tokens macro makes them (whole lowercased words, plus the parts of code identifiers),
-- but row by row, which DuckDB does far faster than with nested list lambdas.
-- input: search_words_batch
with words as (
    select * from search_words_batch
),

whole as (
    select source, session_id, file_id, file_epoch, line_no, field, month, lower(word) as term
    from words
    where length(word) <= 64
),

parts as (
    select source, session_id, file_id, file_epoch, line_no, field, month,
        unnest(string_split(lower(regexp_replace(
            regexp_replace(word, '([a-z0-9])([A-Z])', '\1_\2', 'g'),
            '([A-Z]+)([A-Z][a-z])', '\1_\2', 'g')), '_')) as term,
        lower(word) as whole_word
    from words
    where regexp_matches(word, '[A-Z_]')
),

terms as (
    select source, session_id, file_id, file_epoch, line_no, field, month, term from whole
    union all
    select source, session_id, file_id, file_epoch, line_no, field, month, term
    from parts
    where term <> whole_word and length(term) between 1 and 64
),

final as (
    select term, source, session_id, file_id, file_epoch, line_no, field, count(*)::integer as tf, month
    from terms
    group by all
)

select * from final
order by term, file_id, line_no
