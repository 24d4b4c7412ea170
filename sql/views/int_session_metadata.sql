-- grain: one row per session that wrote metadata records; for each kind the last writer in
-- file order wins, and an empty string clears the value (as Claude Code restores them)
with metadata as (
    select
        source,
        session_id,
        record_type,
        file_id,
        line_no,
        json(metadata_raw) as j,
        text
    from stg_records
    where kind = 'metadata'
),

last_values as (
    select
        source,
        session_id,
        arg_max(j ->> 'customTitle', (file_id, line_no)) filter (record_type = 'custom-title') as custom_title,
        arg_max(j ->> 'aiTitle', (file_id, line_no)) filter (record_type = 'ai-title') as ai_title,
        arg_max(j ->> 'summary', (file_id, line_no)) filter (record_type = 'summary') as summary,
        arg_max(j ->> 'tag', (file_id, line_no)) filter (record_type = 'tag') as tag,
        arg_max(j ->> 'agentName', (file_id, line_no)) filter (record_type = 'agent-name') as agent_name,
        arg_max(j ->> 'mode', (file_id, line_no)) filter (record_type = 'mode') as mode,
        arg_max(j ->> 'prUrl', (file_id, line_no)) filter (record_type = 'pr-link') as pr_url,
        arg_max(j -> 'worktreeSession', (file_id, line_no)) filter (record_type = 'worktree-state') as worktree_state,
        arg_max(j ->> 'lastPrompt', (file_id, line_no)) filter (record_type = 'last-prompt') as last_prompt,
        arg_max(j ->> 'agentType', (file_id, line_no)) filter (record_type = 'agent-meta') as agent_type,
        arg_max(j ->> 'description', (file_id, line_no)) filter (record_type = 'agent-meta') as agent_description,
        -- other sources: a metadata record carries the session's title, if any, in `text`
        arg_max(nullif(trim(text), ''), (file_id, line_no))
            filter (source <> 'claude_code' and nullif(trim(text), '') is not null) as source_title
    from metadata
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
