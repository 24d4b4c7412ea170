-- grain: one row per matching document, best first: BM25 over the term postings (k1 = 1.2,
-- b = 0.75), documents matching more of the query's terms first
-- parameters: $terms (list of query terms), $fields (['message'] or ['message', 'tool']),
--             $source, $cwd, $since, $until, $role (each may be null), $phrases (texts every
--             hit must contain, case-insensitive; may be empty), $limit
with docs as (
    -- read once, for both the corpus figures and each hit's length
    select session_id, file_id, file_epoch, line_no, field, length
    from search_docs
    where list_contains($fields::varchar[], field)
),

corpus as (
    select count(*) as n_docs, avg(length) as avg_length
    from docs
),

hits as (
    -- a list of constants, not a join: the scan itself then skips every posting of another
    -- term, and every row group whose terms all sort outside the list (postings are stored
    -- sorted by term in narrow row groups, so that is nearly all of them)
    select p.*
    from search_postings as p
    where list_contains($terms::varchar[], p.term)
        and list_contains($fields::varchar[], p.field)
        and ($source is null or p.source = $source)
),

document_frequency as (
    select term, count(*) as df
    from hits
    group by term
),

scored as (
    select
        h.source,
        d.session_id,
        h.file_id,
        h.file_epoch,
        h.line_no,
        h.field,
        count(*) as matched_terms,
        sum(
            ln(1 + (corpus.n_docs - df.df + 0.5) / (df.df + 0.5))
            * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * d.length / corpus.avg_length))
        ) as score
    from hits as h
    join document_frequency as df using (term)
    join docs as d
        on d.file_id = h.file_id and d.file_epoch = h.file_epoch
        and d.line_no = h.line_no and d.field = h.field
    cross join corpus
    group by all
),

-- when only the words decide, just the best $limit (ties kept) go on to be looked up: those
-- ranking at or above the $limit-th best, found by a top-N instead of ranking every document
best as (
    select matched_terms, score
    from scored
    order by matched_terms desc, score desc
    limit $limit
),

cutoff as (
    select matched_terms, score
    from best
    order by matched_terms, score
    limit 1
),

candidates as (
    select s.*
    from scored as s
    cross join cutoff as c
    where not ($role is null and $since is null and $until is null and $cwd is null
               and len($phrases::varchar[]) = 0)
        or s.matched_terms > c.matched_terms
        -- a hair below the cutoff, so a sum added up in another order still makes it; one
        -- row too many only costs a lookup, the final order and limit come later
        or (s.matched_terms = c.matched_terms and s.score >= c.score - 1e-9)
),

filtered as (
    select
        s.*,
        r.role,
        r.message_id,
        r."timestamp",
        case when s.field = 'message' then r.text end as text,
        sess.title,
        sess.cwd
    from candidates as s
    join stg_records as r
        on r.file_id = s.file_id and r.file_epoch = s.file_epoch and r.line_no = s.line_no
    left join sessions as sess
        on sess.source = s.source and sess.session_id = s.session_id
    where ($role is null or r.role = $role)
        and ($since is null or r."timestamp" >= $since::timestamp)
        and ($until is null or r."timestamp" < $until::timestamp)
        and ($cwd is null or sess.cwd = $cwd or starts_with(sess.cwd, rtrim($cwd, '/') || '/'))
),

-- without phrases the final order is known here, so tool texts are fetched for $limit rows only
shortlist as (
    select * from filtered
    qualify len($phrases::varchar[]) > 0
        or row_number() over (order by matched_terms desc, score desc, "timestamp" desc nulls last,
                                       session_id, line_no) <= $limit
),

tool_texts as (
    select
        b.file_id,
        b.file_epoch,
        b.line_no,
        string_agg(concat_ws(chr(10), b.tool_name, b.tool_input::varchar, b.output_text), chr(10)
                   order by b.block_index) as tool_text
    from stg_blocks as b
    semi join (select * from shortlist where field = 'tool') as s
        on s.file_id = b.file_id and s.file_epoch = b.file_epoch and s.line_no = b.line_no
    group by b.file_id, b.file_epoch, b.line_no
),

with_tools as (
    select s.*, t.tool_text
    from shortlist as s
    left join tool_texts as t
        on s.field = 'tool' and t.file_id = s.file_id and t.file_epoch = s.file_epoch and t.line_no = s.line_no
),

final as (
    select
        source,
        session_id,
        title,
        cwd,
        "timestamp",
        role,
        field,
        message_id,
        line_no,
        file_id,
        matched_terms,
        round(score, 4) as score,
        coalesce(text, tool_text) as body
    from with_tools
    where len($phrases::varchar[]) = 0
        or list_bool_and(list_transform($phrases::varchar[],
            lambda p: contains(lower(coalesce(text, tool_text, '')), lower(p))))
)

select * from final
order by matched_terms desc, score desc, "timestamp" desc nulls last, session_id, line_no
limit $limit
