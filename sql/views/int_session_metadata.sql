-- grain: one row per session that wrote metadata records; for each kind the last writer in
-- file order wins, and an empty string clears the value (as Claude Code restores them)
with parts as (
    -- the parts whose records set metadata: the last value of each kind and its line
    select * from int_session_parts
    where metadata_records > 0
),

last_values as (
    select
        source,
        session_id,
        arg_max(custom_title, (file_id, custom_title_line)) as custom_title,
        arg_max(ai_title, (file_id, ai_title_line)) as ai_title,
        arg_max(summary, (file_id, summary_line)) as summary,
        arg_max(tag, (file_id, tag_line)) as tag,
        arg_max(agent_name, (file_id, agent_name_line)) as agent_name,
        arg_max(mode, (file_id, mode_line)) as mode,
        arg_max(pr_url, (file_id, pr_url_line)) as pr_url,
        arg_max(worktree_state, (file_id, worktree_state_line)) as worktree_state,
        arg_max(last_prompt, (file_id, last_prompt_line)) as last_prompt,
        arg_max(agent_type, (file_id, agent_type_line)) as agent_type,
        arg_max(agent_description, (file_id, agent_description_line)) as agent_description,
        arg_max(source_title, (file_id, source_title_line)) as source_title
    from parts
    group by source, session_id
),

final as (
    select
        source,
        session_id,
        nullif(custom_title, '') as custom_title,
        nullif(ai_title, '') as ai_title,
        nullif(summary, '') as summary,
        nullif(tag, '') as tag,
        nullif(agent_name, '') as agent_name,
        mode,
        pr_url,
        worktree_state,
        last_prompt,
        agent_type,
        nullif(agent_description, '') as agent_description,
        source_title
    from last_values
)

select * from final
