-- grain: one row per line made of an aider chat history: a session header ("session") or one
--        message ("user" = a run of #### lines, "assistant" = the reply text between aider's
--        own lines, "tool_output" = a run of > lines); every line kept
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "type": "VARCHAR", "session_id": "VARCHAR", "repo": "VARCHAR",
            "line": "BIGINT", "end_line": "BIGINT",
            "started_at": "VARCHAR", "timestamp": "VARCHAR",
            "text": "VARCHAR", "model": "VARCHAR", "edit_format": "VARCHAR", "aider_version": "VARCHAR",
            "tokens": {"sent": "BIGINT", "received": "BIGINT", "cache_write": "BIGINT", "cache_hit": "BIGINT"}
        }') as j
    from lines as l
),

typed as (
    select
        f.source,
        coalesce(p.j.session_id, f.session_hint, f.file_stem) as session_id,
        f.parent_session_hint as parent_session_id,
        p.file_id,
        f.file_epoch,
        f.source_file,
        p.line_no,
        p.byte_offset,
        f.run_id as ingest_run_id,
        coalesce(p.j.type, 'unknown') as record_type,
        case when p.j.type = 'session' then p.j.edit_format end as subtype,
        -- a message is known by the line of the log it starts on
        case when p.j.type in ('user', 'assistant', 'tool_output') then 'L' || p.j.line end as message_id,
        null::varchar as parent_id,
        null::varchar as logical_parent_id,
        case p.j.type
            when 'user' then 'user'
            when 'assistant' then 'assistant'
            when 'tool_output' then 'system'
        end as role,
        -- the header's own local time; "timestamp" is that time in UTC
        p.j.started_at as timestamp_raw,
        timezone('UTC', try_cast(p.j."timestamp" as timestamptz)) as "timestamp",
        false as is_sidechain,
        false as is_meta,
        false as is_compact_summary,
        null::varchar as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case when p.j.type in ('session', 'assistant', 'tool_output') then nullif(p.j.model, '') end as model,
        case when p.j.type = 'session' then p.j.repo end as cwd,
        null::varchar as git_branch,
        case when p.j.type = 'session' then p.j.aider_version end as version,
        case when p.j.type in ('user', 'assistant', 'tool_output') then p.j.text end as text,
        p.j.tokens.sent as input_tokens,
        p.j.tokens.received as output_tokens,
        p.j.tokens.cache_write as cache_creation_tokens,
        p.j.tokens.cache_hit as cache_read_tokens,
        case when p.j.type in ('user', 'assistant', 'tool_output')
            then json_object('type', p.j.type, 'text', p.j.text)
        end as content,
        p.line as raw
    from parsed as p
    join batch_files as f on f.file_id = p.file_id
),

classified as (
    select
        *,
        case record_type
            when 'session' then 'metadata'
            when 'user' then 'prompt'
            when 'assistant' then 'response'
            when 'tool_output' then 'system'
            else 'unknown'
        end as kind,
        case
            when role <> 'user' or role is null then null
            -- a chat-mode switch carrying a request is the request; other commands are not
            when regexp_matches(text, '^/(ask|code|architect|context)\s+\S') then null
            when text like '/%' then 'slash_command'
            when text = '<blank>' then 'meta'
        end as harness_kind
    from typed
),

final as (
    select
        *,
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from classified
)

select * from final
