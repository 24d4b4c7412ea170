-- grain: one row per complete JSONL line of a Claude Code transcript (every record type kept)
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "type": "VARCHAR", "subtype": "VARCHAR",
            "uuid": "VARCHAR", "parentUuid": "VARCHAR", "logicalParentUuid": "VARCHAR",
            "sessionId": "VARCHAR", "timestamp": "VARCHAR",
            "isSidechain": "BOOLEAN", "isMeta": "BOOLEAN", "isCompactSummary": "BOOLEAN",
            "agentId": "VARCHAR", "requestId": "VARCHAR",
            "cwd": "VARCHAR", "gitBranch": "VARCHAR", "version": "VARCHAR",
            "content": "JSON", "summary": "VARCHAR",
            "message": {
                "id": "VARCHAR", "role": "VARCHAR", "model": "VARCHAR",
                "content": [{
                    "type": "VARCHAR", "text": "VARCHAR", "thinking": "VARCHAR",
                    "id": "VARCHAR", "name": "VARCHAR", "input": "JSON",
                    "tool_use_id": "VARCHAR", "content": "VARCHAR", "is_error": "BOOLEAN",
                    "source": {"media_type": "VARCHAR", "data": "VARCHAR"}
                }],
                "usage": {
                    "input_tokens": "BIGINT", "output_tokens": "BIGINT",
                    "cache_creation_input_tokens": "BIGINT", "cache_read_input_tokens": "BIGINT"
                }
            }
        }') as j
    from lines as l
),

blocks_of as (
    -- The line is parsed once, content blocks included (claude_code__blocks unnests them).
    -- A tool result's content comes out as text: a string as itself, a list of blocks as its
    -- JSON (claude_code__blocks tells the two apart). Read as JSON, every string result was
    -- written back out as a JSON string only to be parsed again, a tenth of the load's time.
    -- Content that is not a list of blocks comes out null there; a plain string prompt or
    -- reply is then read on its own, which is only those (short) lines.
    select
        *,
        j.message.content as bl,
        case when j.message.content is null and j.type in ('user', 'assistant')
            then json_extract(line, '$.message.content')
        end as content_json
    from parsed
),

typed as (
    select
        f.source,
        coalesce(f.session_hint, j.sessionId || '/' || f.file_stem, f.file_stem) as session_id,
        coalesce(f.parent_session_hint, case when f.session_hint is null then j.sessionId end)
            as parent_session_id,
        b.file_id,
        f.file_epoch,
        f.source_file,
        b.line_no,
        b.byte_offset,
        f.run_id as ingest_run_id,
        case
            when j.type is not null then j.type
            when f.file_stem like 'agent-%.meta' then 'agent-meta'
            else 'unknown'
        end as record_type,
        j.subtype,
        j.uuid as message_id,
        j.parentUuid as parent_id,
        j.logicalParentUuid as logical_parent_id,
        case
            when j.type in ('user', 'assistant') then coalesce(j.message.role, j.type)
            when j.type = 'system' then 'system'
        end as role,
        j.timestamp as timestamp_raw,
        timezone('UTC', try_cast(j.timestamp as timestamptz)) as "timestamp",
        coalesce(j.isSidechain, false) as is_sidechain,
        coalesce(j.isMeta, false) as is_meta,
        coalesce(j.isCompactSummary, false) as is_compact_summary,
        j.agentId as agent_id,
        j.requestId as request_id,
        j.message.id as api_message_id,
        j.message.model as model,
        j.cwd,
        j.gitBranch as git_branch,
        j.version,
        case
            when starts_with(b.content_json, '"') then b.content_json ->> '$'
            when b.bl is not null then nullif(array_to_string(
                list_filter(
                    list_transform(b.bl, lambda x: case when x.type = 'text' then x.text end),
                    lambda t: t is not null),
                chr(10)), '')
            when j.type = 'system' and starts_with(j.content, '"') then j.content ->> '$'
            when j.type = 'summary' then j.summary
        end as text,
        list_transform(b.bl, lambda x: x.type) as block_types,
        j.message.usage.input_tokens as input_tokens,
        j.message.usage.output_tokens as output_tokens,
        j.message.usage.cache_creation_input_tokens as cache_creation_tokens,
        j.message.usage.cache_read_input_tokens as cache_read_tokens,
        b.bl as content,        -- the parsed blocks, for claude_code__blocks; not stored
        b.line as raw
    from blocks_of as b
    join batch_files as f on f.file_id = b.file_id
),

classified as (
    select
        *,
        case
            when record_type = 'user' and list_contains(block_types, 'tool_result') then 'tool_result'
            when record_type = 'user' then 'prompt'
            when record_type = 'assistant' and list_contains(block_types, 'tool_use') then 'tool_use'
            when record_type = 'assistant'
                and len(block_types) > 0
                and len(list_filter(block_types,
                    lambda t: t not in ('thinking', 'redacted_thinking'))) = 0 then 'thinking'
            when record_type = 'assistant' then 'response'
            when record_type = 'system' and subtype = 'compact_boundary' then 'compact_boundary'
            when record_type = 'system' then 'system'
            when record_type in ('summary', 'custom-title', 'ai-title', 'agent-name', 'tag',
                                 'mode', 'pr-link', 'worktree-state', 'last-prompt',
                                 'agent-color', 'agent-setting', 'task-summary', 'agent-meta')
                then 'metadata'
            when record_type in ('attachment', 'progress', 'file-history-snapshot',
                                 'queue-operation', 'content-replacement',
                                 'attribution-snapshot', 'permission-mode')
                then replace(record_type, '-', '_')
            else 'unknown'
        end as kind,
        case
            when role <> 'user' or role is null then null
            when is_compact_summary
                or text like 'This session is being continued from a previous conversation%'
                then 'compact_summary'
            when text like '[Request interrupted by user%' then 'interrupt'
            when text like '%<command-name>%' or text like '<command-message>%' then 'slash_command'
            when text like '<local-command-stdout>%' or text like '<local-command-stderr>%'
                or text like '<bash-stdout>%' or text like '<bash-stderr>%' then 'command_output'
            when text like '<bash-input>%' then 'shell_escape'
            when text like 'Caveat: The messages below were generated by the user%' then 'meta'
            when text like '<system-reminder>%' then 'system_reminder'
            when is_meta then 'meta'
        end as harness_kind
    from typed
),

final as (
    select
        * exclude (block_types),
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from classified
)

select * from final
