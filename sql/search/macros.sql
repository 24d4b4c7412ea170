-- Tokenization shared by the index (at ingest) and by queries, so both always agree.
-- A token is a run of letters, digits and underscores, lowercased; code identifiers are also
-- split into their parts (connection_pool, ConnectionPool -> connection, pool) and indexed
-- both whole and split.
create or replace macro search_tokens(s) as (
    flatten(list_transform(
        regexp_extract_all(left(s, 100000), '[A-Za-z0-9_]+'),
        lambda w: list_filter(
            list_distinct(list_concat(
                [lower(w)],
                string_split(lower(regexp_replace(
                    regexp_replace(w, '([a-z0-9])([A-Z])', '\1_\2', 'g'),
                    '([A-Z]+)([A-Z][a-z])', '\1_\2', 'g')), '_')
            )),
            lambda t: length(t) between 1 and 64)
    ))
);
