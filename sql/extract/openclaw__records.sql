-- grain: one row per line made of an OpenClaw store: a line of a legacy <sessionId>.jsonl
--        transcript (a pi session entry), or a session_nodes / session_windows /
--        transcript_events row of an agent database (the line names its "table";
--        a transcript event carries the same entry in "event"); every line kept
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
with wrapped as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "table": "VARCHAR", "agent_id": "VARCHAR", "session_id": "VARCHAR",
            "created_at": "BIGINT", "started_at": "BIGINT", "event": "JSON",
            "session_key": "VARCHAR", "current_session_id": "VARCHAR",
            "previous_session_id": "VARCHAR", "reason": "VARCHAR", "created_via": "VARCHAR",
            "model": "VARCHAR", "display_name": "VARCHAR", "label": "VARCHAR",
            "node_cwd": "VARCHAR", "node_label": "VARCHAR", "app_version": "VARCHAR",
            "parent_session_id": "VARCHAR",
            "entry_json": {"cwd": "VARCHAR", "model": "VARCHAR", "displayName": "VARCHAR"}
        }') as w
    from lines as l
),

parsed as (
    select
        *,
        json_transform(
            case when w."table" = 'transcript_events' then w.event when w."table" is null then line::json end,
            '{
                "type": "VARCHAR", "id": "VARCHAR", "parentId": "VARCHAR", "timestamp": "JSON",
                "version": "VARCHAR", "cwd": "VARCHAR", "summary": "VARCHAR",
                "firstKeptEntryId": "VARCHAR", "fromId": "VARCHAR", "customType": "VARCHAR",
                "content": "JSON", "name": "VARCHAR", "modelId": "VARCHAR",
                "role": "VARCHAR", "text": "VARCHAR",
                "message": {
                    "role": "VARCHAR", "content": "JSON", "model": "VARCHAR",
                    "responseId": "VARCHAR", "timestamp": "JSON", "toolCallId": "VARCHAR",
                    "toolName": "VARCHAR", "isError": "BOOLEAN", "command": "VARCHAR",
                    "output": "VARCHAR", "exitCode": "BIGINT", "cancelled": "BOOLEAN",
                    "summary": "VARCHAR",
                    "usage": {"input": "BIGINT", "output": "BIGINT", "cacheRead": "BIGINT",
                              "cacheWrite": "BIGINT"}
                }
            }') as e
    from wrapped
),

shaped as (
    select
        *,
        case
            when w."table" = 'session_windows' then 'session_window'
            when w."table" = 'session_nodes' then 'session_node'
            when w."table" not in ('transcript_events') then w."table"
            else coalesce(e.type, 'unknown')
        end as rtype,
        case when e.type = 'message' then coalesce(e.message.role, e.role) end as mrole,
        case
            when e.type = 'message' then coalesce(e.message.content, to_json(e.text))
            when e.type = 'custom_message' then e.content
        end as body,
        -- an entry's own time (ISO text, or Unix ms), else its message's, else the row's
        case
            when json_type(e.timestamp) in ('VARCHAR', 'UBIGINT', 'BIGINT', 'DOUBLE') then e.timestamp
            when json_type(e.message.timestamp) in ('VARCHAR', 'UBIGINT', 'BIGINT', 'DOUBLE') then e.message.timestamp
        end as ts_json
    from parsed
),

parts_of as (
    select
        *,
        case
            when json_type(body) = 'ARRAY' then json_transform(body, '[{"type": "VARCHAR", "text": "VARCHAR",
                "thinking": "VARCHAR"}]')
            when json_type(body) = 'VARCHAR' then [{'type': 'text', 'text': body ->> '$', 'thinking': null::varchar}]
        end as pl,
        case when json_type(ts_json) = 'VARCHAR' then ts_json ->> '$' end as ts_text,
        case when json_type(ts_json) <> 'VARCHAR' then try_cast(ts_json ->> '$' as double) end as ts_ms,
        -- a node row describes the session key (older than its current session): no time
        case
            when w."table" = 'session_windows' then coalesce(w.started_at, w.created_at)
            when w."table" = 'session_nodes' then null
            else w.created_at
        end as row_ms
    from shaped
),

facts as (
    select
        *,
        nullif(array_to_string(list_filter(
            list_transform(pl, lambda p: case when p.type = 'text' then p.text end),
            lambda t: t is not null), chr(10)), '') as parts_text,
        coalesce(len(list_filter(pl, lambda p: p.type = 'toolCall')), 0) as n_calls,
        coalesce(len(list_filter(pl, lambda p: p.type = 'thinking')), 0) as n_thinking,
        coalesce(len(pl), 0) as n_parts
    from parts_of
),

typed as (
    select
        f.source,
        case
            when x.w."table" is null then coalesce(f.session_hint, f.file_stem)
            when x.w."table" = 'session_nodes' then x.w.current_session_id
            else x.w.session_id
        end as session_id,
        coalesce(f.parent_session_hint, nullif(x.w.parent_session_id, '')) as parent_session_id,
        x.file_id,
        f.file_epoch,
        f.source_file,
        x.line_no,
        x.byte_offset,
        f.run_id as ingest_run_id,
        x.rtype as record_type,
        case
            when x.rtype = 'message' then x.mrole
            when x.rtype in ('custom', 'custom_message') then x.e.customType
            when x.rtype = 'session' then 'v' || coalesce(x.e.version, '1')
            when x.rtype = 'session_window' then x.w.reason
            when x.rtype = 'session_node' then x.w.created_via
        end as subtype,
        case when x.rtype not in ('session', 'session_window', 'session_node') then x.e.id end as message_id,
        x.e.parentId as parent_id,
        case
            when x.rtype = 'compaction' then x.e.firstKeptEntryId
            when x.rtype = 'branch_summary' then x.e.fromId
        end as logical_parent_id,
        case
            when x.rtype = 'message' and x.mrole = 'assistant' then 'assistant'
            when x.rtype = 'message' and x.mrole = 'system' then 'system'
            when x.rtype = 'message' and x.mrole in ('user', 'toolResult', 'bashExecution', 'custom',
                                                    'hookMessage', 'branchSummary', 'compactionSummary')
                then 'user'
            when x.rtype = 'custom_message' then 'user'
            when x.rtype in ('compaction', 'branch_summary') then 'system'
        end as role,
        coalesce(x.ts_text, x.ts_ms::bigint::varchar, x.row_ms::varchar, x.w.created_at::varchar) as timestamp_raw,
        case
            when x.ts_text is not null and regexp_matches(x.ts_text, '(Z|[+-]\d\d:?\d\d)$')
                then timezone('UTC', try_cast(x.ts_text as timestamptz))
            when x.ts_text is not null then try_cast(x.ts_text as timestamp)
            when abs(x.ts_ms) < 100000000000 then try(make_timestamp((x.ts_ms * 1000000)::bigint))
            when x.ts_ms is not null then try(make_timestamp((x.ts_ms * 1000)::bigint))
            when x.row_ms is not null then try(make_timestamp(x.row_ms * 1000))
        end as "timestamp",
        coalesce(nullif(x.w.agent_id, ''), nullif(regexp_extract(f.source_file, '/agents/([^/]+)/', 1), ''))
            as agent_id,
        case
            when x.mrole = 'assistant' then x.e.message.responseId
        end as api_message_id,
        case
            when x.mrole = 'assistant' then x.e.message.model
            when x.rtype = 'model_change' then x.e.modelId
            when x.rtype = 'session_window' then nullif(x.w.model, '')
            when x.rtype = 'session_node' then nullif(x.w.entry_json.model, '')
        end as model,
        case
            when x.rtype = 'session' then nullif(x.e.cwd, '')
            when x.rtype = 'session_window' then nullif(x.w.node_cwd, '')
            when x.rtype = 'session_node' then nullif(x.w.entry_json.cwd, '')
        end as cwd,
        case
            when x.rtype = 'session' then coalesce(x.e.version, '1')
            when x.rtype = 'session_window' then x.w.app_version
        end as version,
        case
            -- a metadata record carries the session's title, if any
            when x.rtype = 'session_info' then nullif(trim(x.e.name), '')
            when x.rtype = 'session_window' then coalesce(nullif(trim(x.w.display_name), ''), nullif(trim(x.w.node_label), ''))
            when x.rtype = 'session_node' then coalesce(nullif(trim(x.w.label), ''), nullif(trim(x.w.display_name), ''),
                                                        nullif(trim(x.w.entry_json.displayName), ''))
            when x.rtype in ('compaction', 'branch_summary') then x.e.summary
            when x.mrole = 'bashExecution' then x.e.message.command
            when x.mrole in ('branchSummary', 'compactionSummary') then coalesce(x.parts_text, x.e.message.summary)
            when x.mrole = 'toolResult' then null
            when x.rtype in ('message', 'custom_message') then x.parts_text
        end as text,
        case when x.mrole = 'assistant' then x.e.message.usage.input end as input_tokens,
        case when x.mrole = 'assistant' then x.e.message.usage.output end as output_tokens,
        case when x.mrole = 'assistant' then x.e.message.usage.cacheWrite end as cache_creation_tokens,
        case when x.mrole = 'assistant' then x.e.message.usage.cacheRead end as cache_read_tokens,
        case
            when x.rtype in ('message', 'custom_message') then json_object(
                'role', coalesce(x.mrole, 'custom'), 'parts', x.body,
                'toolCallId', x.e.message.toolCallId, 'toolName', x.e.message.toolName,
                'isError', x.e.message.isError, 'command', x.e.message.command,
                'output', x.e.message.output, 'exitCode', x.e.message.exitCode,
                'cancelled', x.e.message.cancelled, 'summary', x.e.message.summary)
            when x.rtype in ('compaction', 'branch_summary') and x.e.summary is not null
                then json_object('role', x.rtype, 'summary', x.e.summary)
        end as content,
        x.mrole,
        x.n_calls,
        x.n_thinking,
        x.n_parts,
        x.line as raw
    from facts as x
    join batch_files as f on f.file_id = x.file_id
),

classified as (
    select
        *,
        case
            when record_type = 'message' and mrole = 'assistant' and n_calls > 0 then 'tool_use'
            when record_type = 'message' and mrole = 'assistant' and n_parts > 0 and n_thinking = n_parts
                then 'thinking'
            when record_type = 'message' and mrole = 'assistant' then 'response'
            when record_type = 'message' and mrole = 'toolResult' then 'tool_result'
            when record_type = 'message' and role = 'user' then 'prompt'
            when record_type = 'message' and role = 'system' then 'system'
            when record_type = 'custom_message' then 'prompt'
            when record_type = 'compaction' then 'compact_boundary'
            when record_type = 'branch_summary' then 'system'
            when record_type in ('session', 'model_change', 'session_info', 'session_window', 'session_node')
                then 'metadata'
            when record_type in ('thinking_level_change', 'custom', 'label') then record_type
            else 'unknown'
        end as kind,
        case
            when role <> 'user' or role is null then null
            when mrole = 'toolResult' then null
            when mrole = 'bashExecution' then 'shell_escape'
            when mrole in ('custom', 'hookMessage') or record_type = 'custom_message' then 'custom_message'
            when mrole = 'compactionSummary' then 'compact_summary'
            when mrole = 'branchSummary' then 'branch_summary'
        end as harness_kind
    from typed
),

final as (
    select
        source,
        session_id,
        parent_session_id,
        file_id,
        file_epoch,
        source_file,
        line_no,
        byte_offset,
        ingest_run_id,
        record_type,
        subtype,
        message_id,
        parent_id,
        logical_parent_id,
        role,
        timestamp_raw,
        "timestamp",
        false as is_sidechain,
        false as is_meta,
        record_type = 'compaction' or coalesce(mrole = 'compactionSummary', false) as is_compact_summary,
        agent_id,
        null::varchar as request_id,
        api_message_id,
        model,
        cwd,
        null::varchar as git_branch,
        version,
        text,
        input_tokens,
        output_tokens,
        cache_creation_tokens,
        cache_read_tokens,
        content,
        raw,
        kind,
        harness_kind,
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from classified
)

select * from final
