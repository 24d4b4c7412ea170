-- grain: one row per session of any source; a subagent is a session with a parent_session_id
with records as (
    select * from stg_records
),

messages as (
    select * from messages
),

metadata as (
    select * from int_session_metadata
),

facts as (
    select
        source,
        session_id,
        any_value(parent_session_id) filter (parent_session_id is not null) as parent_session_id,
        arg_max(cwd, (coalesce("timestamp", timestamp '1970-01-01'), line_no)) filter (cwd is not null) as cwd,
        arg_max(git_branch, (coalesce("timestamp", timestamp '1970-01-01'), line_no))
            filter (git_branch is not null and git_branch <> '') as git_branch,
        arg_max(model, (coalesce("timestamp", timestamp '1970-01-01'), line_no))
            filter (model is not null and model <> '<synthetic>') as model,
        arg_max(version, line_no) filter (version is not null) as agent_version,
        min("timestamp") as started_at,
        max("timestamp") as ended_at,
        arg_min(text, (coalesce("timestamp", timestamp '9999-12-31'), line_no))
            filter (kind = 'prompt' and harness_kind is null and text is not null) as first_prompt,
        bool_or(is_sidechain) as has_sidechain_records,
        count(*) as record_count
    from records
    group by source, session_id
),

message_counts as (
    select source, session_id, count(*) as message_count
    from messages
    group by source, session_id
),

final as (
    select
        facts.session_id,
        facts.source,
        coalesce(
            metadata.custom_title,
            metadata.ai_title,
            metadata.summary,
            metadata.agent_description,
            metadata.source_title,
            left(regexp_replace(trim(facts.first_prompt), '\s+', ' ', 'g'), 100)
        ) as title,
        facts.cwd,
        facts.git_branch,
        facts.model,
        facts.started_at,
        facts.ended_at,
        coalesce(message_counts.message_count, 0) as message_count,
        facts.parent_session_id,
        facts.agent_version,
        facts.record_count,
        metadata.tag,
        metadata.agent_name,
        metadata.agent_type
    from facts
    left join metadata using (source, session_id)
    left join message_counts using (source, session_id)
)

select * from final
