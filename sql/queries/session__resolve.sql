-- grain: one row per session a reference could mean: the exact id, else every id it prefixes;
-- `latest` means the newest session (in $cwd or below it when given)
-- parameters: $ref, $cwd (or null)
with candidates as (
    select
        session_id,
        source,
        title,
        cwd,
        parent_session_id,
        coalesce(ended_at, started_at) as last_active
    from sessions
    where ($cwd is null or cwd = $cwd or starts_with(cwd, rtrim($cwd, '/') || '/'))
),

exact as (
    select * from candidates where session_id = $ref
),

prefixed as (
    select * from candidates
    where $ref <> 'latest' and starts_with(session_id, $ref)
        and not exists (select 1 from exact)
),

latest as (
    select * from candidates
    where $ref = 'latest' and parent_session_id is null and not exists (select 1 from exact)
    order by last_active desc nulls last, session_id
    limit 1
),

final as (
    select * from exact
    union all
    select * from prefixed
    union all
    select * from latest
)

select * from final
order by parent_session_id is not null, last_active desc nulls last, session_id
