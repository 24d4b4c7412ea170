-- grain: one row per session matching the filters, newest activity first
-- parameters: $source (or null), $cwd (or null: a folder; sessions in it or below it), $limit
select
    session_id,
    source,
    title,
    cwd,
    git_branch,
    model,
    started_at,
    ended_at,
    message_count,
    parent_session_id
from sessions
where ($source is null or source = $source)
    and ($cwd is null or cwd = $cwd or starts_with(cwd, rtrim($cwd, '/') || '/'))
order by coalesce(ended_at, started_at) desc nulls last, session_id
limit $limit
