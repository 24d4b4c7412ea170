-- grain: one row per (source, session, file, epoch) of the records a run loaded: the session's
-- facts over just those records, kept so they combine with the same file's later runs and the
-- session's other files (views/sessions.sql). Publishing the sessions table then reads these
-- few rows instead of every record again.
-- Each "latest"/"first" value keeps the key that chose it, so combining picks exactly what
-- one pass over all the session's records would.
-- input: records_loaded, the run's records as stored (extract/stored_records), read back from
--        its Parquet; or, once, every record of an archive loaded before parts existed
with records as (
    select
        *,
        (coalesce("timestamp", timestamp '1970-01-01'), line_no) as latest_key,
        (coalesce("timestamp", timestamp '9999-12-31'), line_no) as first_key
    from records_loaded
),

facts as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        any_value(parent_session_id) filter (parent_session_id is not null) as parent_session_id,
        arg_max(cwd, latest_key) filter (cwd is not null) as cwd,
        max(latest_key) filter (cwd is not null) as cwd_key,
        arg_max(git_branch, latest_key) filter (git_branch is not null and git_branch <> '') as git_branch,
        max(latest_key) filter (git_branch is not null and git_branch <> '') as git_branch_key,
        arg_max(model, latest_key) filter (model is not null and model <> '<synthetic>') as model,
        max(latest_key) filter (model is not null and model <> '<synthetic>') as model_key,
        arg_max(version, line_no) filter (version is not null) as agent_version,
        max(line_no) filter (version is not null) as agent_version_key,
        min("timestamp") as started_at,
        max("timestamp") as ended_at,
        -- the title a first prompt makes, not the prompt: a pasted prompt can be megabytes
        left(regexp_replace(trim(
            arg_min(text, first_key) filter (kind = 'prompt' and harness_kind is null and text is not null)
        ), '\s+', ' ', 'g'), 100) as first_prompt_title,
        min(first_key) filter (kind = 'prompt' and harness_kind is null and text is not null) as first_prompt_key,
        bool_or(is_sidechain) as has_sidechain_records,
        count(*) as record_count,
        count(*) filter (role is not null) as message_count,
        count(*) filter (kind = 'metadata') as metadata_records,
        min(month) as month
    from records
    group by source, session_id, file_id, file_epoch
),

metadata_values as (
    -- what each metadata record sets (null: it sets nothing of that kind)
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        case when record_type = 'custom-title' then j ->> 'customTitle' end as custom_title,
        case when record_type = 'ai-title' then j ->> 'aiTitle' end as ai_title,
        case when record_type = 'summary' then j ->> 'summary' end as summary,
        case when record_type = 'tag' then j ->> 'tag' end as tag,
        case when record_type = 'agent-name' then j ->> 'agentName' end as agent_name,
        case when record_type = 'mode' then j ->> 'mode' end as mode,
        case when record_type = 'pr-link' then j ->> 'prUrl' end as pr_url,
        case when record_type = 'worktree-state' then j -> 'worktreeSession' end as worktree_state,
        case when record_type = 'last-prompt' then j ->> 'lastPrompt' end as last_prompt,
        case when record_type = 'agent-meta' then j ->> 'agentType' end as agent_type,
        case when record_type = 'agent-meta' then j ->> 'description' end as agent_description,
        -- other sources: a metadata record carries the session's title, if any, in `text`
        case when source <> 'claude_code' then nullif(trim(text), '') end as source_title,
        -- which title wins: the last by line, but a label the store keeps beside the
        -- transcript (OpenClaw's session windows and nodes, given after their session's last
        -- event) only where the transcript names the session nowhere (its session_info)
        case when source = 'openclaw' and record_type in ('session_window', 'session_node')
            then line_no - 4611686018427387904 else line_no end as source_title_key
    from (
        select *, json(metadata_raw) as j
        from records_loaded
        where kind = 'metadata'
    )
),

last_metadata as (
    -- per kind, the last value this part sets and the line that set it
    select
        source,
        session_id,
        file_id,
        file_epoch,
        arg_max(custom_title, line_no) as custom_title,
        max(line_no) filter (custom_title is not null) as custom_title_line,
        arg_max(ai_title, line_no) as ai_title,
        max(line_no) filter (ai_title is not null) as ai_title_line,
        arg_max(summary, line_no) as summary,
        max(line_no) filter (summary is not null) as summary_line,
        arg_max(tag, line_no) as tag,
        max(line_no) filter (tag is not null) as tag_line,
        arg_max(agent_name, line_no) as agent_name,
        max(line_no) filter (agent_name is not null) as agent_name_line,
        arg_max(mode, line_no) as mode,
        max(line_no) filter (mode is not null) as mode_line,
        arg_max(pr_url, line_no) as pr_url,
        max(line_no) filter (pr_url is not null) as pr_url_line,
        arg_max(worktree_state, line_no) as worktree_state,
        max(line_no) filter (worktree_state is not null) as worktree_state_line,
        arg_max(last_prompt, line_no) as last_prompt,
        max(line_no) filter (last_prompt is not null) as last_prompt_line,
        arg_max(agent_type, line_no) as agent_type,
        max(line_no) filter (agent_type is not null) as agent_type_line,
        arg_max(agent_description, line_no) as agent_description,
        max(line_no) filter (agent_description is not null) as agent_description_line,
        arg_max(source_title, source_title_key) filter (source_title is not null) as source_title,
        max(source_title_key) filter (source_title is not null) as source_title_line
    from metadata_values
    group by source, session_id, file_id, file_epoch
),

final as (
    select
        facts.* exclude (month),
        last_metadata.* exclude (source, session_id, file_id, file_epoch),
        facts.month
    from facts
    left join last_metadata using (source, session_id, file_id, file_epoch)
)

select * from final
