-- grain: one row: the facts of one session, with its chain health where the source has one
-- parameters: $session_id
with session as (
    select * from sessions where session_id = $session_id
),

state as (
    select any_value(interruption) as interruption
    from session_state
    where session_id = $session_id
),

issues as (
    select count(*) as chain_issues
    from chain_issues
    where session_id = $session_id
),

branches as (
    select
        min(leaf_timestamp) filter (is_default) as default_leaf_at,
        count(*) as branch_count
    from branches
    where session_id = $session_id
),

final as (
    select
        session.*,
        state.interruption,
        issues.chain_issues,
        branches.branch_count
    from session, state, issues, branches
)

select * from final
