-- grain: one row per line made of a Hermes store: a sessions / messages row of state.db (the
--        line names its "table"), the head or one message of a legacy session_<id>.json log
--        ("format": "session_log"), or one line of a legacy <id>.jsonl transcript (a bare
--        message dict, no "table"); every line kept
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "table": "VARCHAR", "format": "VARCHAR",
            "id": "VARCHAR", "session_id": "VARCHAR", "message_id": "VARCHAR",
            "role": "VARCHAR", "content": "JSON", "tool_calls": "JSON",
            "tool_call_id": "VARCHAR", "tool_name": "VARCHAR",
            "reasoning": "VARCHAR", "reasoning_content": "VARCHAR", "finish_reason": "VARCHAR",
            "timestamp": "JSON", "started_at": "JSON", "session_start": "JSON",
            "active": "BIGINT", "compacted": "BIGINT", "_compressed_summary": "BIGINT",
            "display_kind": "VARCHAR",
            "source": "VARCHAR", "platform": "VARCHAR", "model": "VARCHAR", "model_config": "JSON",
            "parent_session_id": "VARCHAR", "cwd": "VARCHAR", "git_branch": "VARCHAR",
            "title": "VARCHAR",
            "input_tokens": "BIGINT", "output_tokens": "BIGINT",
            "cache_read_tokens": "BIGINT", "cache_write_tokens": "BIGINT"
        }') as j
    from lines as l
),

shaped as (
    select
        p.*,
        case
            when j.role = 'session_meta' then 'session_meta'
            when j."table" = 'sessions' then 'session'
            when j."table" = 'messages' then 'message'
            when j."table" is not null then j."table"
            when j.role is not null or j.content is not null then 'message'
            else 'unknown'
        end as rtype,
        case
            when j.role in ('user', 'assistant', 'system') then j.role
            when j.role in ('tool', 'function', 'tool_result') then 'user'
        end as r_role,
        case when j."table" = 'sessions' then coalesce(j.started_at, j.session_start) else j."timestamp" end
            as ts_json
    from parsed as p
),

timed as (
    select
        *,
        case when json_type(ts_json) in ('DOUBLE', 'BIGINT', 'UBIGINT') then ts_json::double end as ts_num,
        case when json_type(ts_json) = 'VARCHAR' then ts_json ->> '$' end as ts_text,
        case when json_type(j.content) = 'ARRAY'
            then json_transform(j.content, '[{"type": "VARCHAR", "text": "VARCHAR"}]')
        end as parts
    from shaped
),

typed as (
    select
        f.source,
        case
            when t.rtype = 'session' and t.j.format is null then t.j.id
            else coalesce(t.j.session_id, f.session_hint, f.file_stem)
        end as session_id,
        case
            when t.rtype = 'session' then coalesce(f.parent_session_hint, nullif(t.j.parent_session_id, ''))
            else f.parent_session_hint
        end as parent_session_id,
        t.file_id,
        f.file_epoch,
        f.source_file,
        t.line_no,
        t.byte_offset,
        f.run_id as ingest_run_id,
        t.rtype as record_type,
        case
            when t.rtype = 'session' then nullif(coalesce(t.j.source, t.j.platform), '')
            when t.j.compacted = 1 then 'compacted'
            when t.j.active = 0 then 'inactive'
            else t.j.display_kind
        end as subtype,
        case when t.rtype = 'message' then coalesce(t.j.message_id, t.j.id) end as message_id,
        null::varchar as parent_id,
        null::varchar as logical_parent_id,
        case when t.rtype = 'message' then t.r_role end as role,
        coalesce(t.ts_text, t.ts_json::varchar) as timestamp_raw,
        case
            when abs(t.ts_num) < 100000000000 then make_timestamp((t.ts_num * 1000000)::bigint)
            when abs(t.ts_num) < 100000000000000 then make_timestamp((t.ts_num * 1000)::bigint)
            when t.ts_num is not null then null
            when regexp_matches(t.ts_text, '(Z|[+-]\d\d:?\d\d)$')
                then timezone('UTC', try_cast(t.ts_text as timestamptz))
            else try_cast(t.ts_text as timestamp)
        end as "timestamp",
        false as is_sidechain,
        false as is_meta,
        null::varchar as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case when t.rtype in ('session', 'session_meta') then nullif(t.j.model, '') end as model,
        case when t.rtype in ('session', 'session_meta')
            then coalesce(nullif(t.j.cwd, ''), nullif(json_extract_string(t.j.model_config, '$.cwd'), ''))
        end as cwd,
        case when t.rtype = 'session' then nullif(t.j.git_branch, '') end as git_branch,
        null::varchar as version,
        case
            -- a session record carries the session's title (the convention for metadata rows)
            when t.rtype = 'session' then nullif(trim(t.j.title), '')
            when t.rtype <> 'message' or t.j.role in ('tool', 'function', 'tool_result') then null
            when json_type(t.j.content) = 'VARCHAR' then nullif(t.j.content ->> '$', '')
            when t.parts is not null then nullif(array_to_string(
                list_filter(
                    list_transform(t.parts, lambda x: case
                        when x.type in ('text', 'input_text', 'output_text') then x.text end),
                    lambda s: s is not null),
                chr(10)), '')
        end as text,
        t.j.role as source_role,
        json_array_length(case when json_type(t.j.tool_calls) = 'ARRAY' then t.j.tool_calls end) as n_calls,
        coalesce(nullif(t.j.reasoning, ''), nullif(t.j.reasoning_content, '')) as reasoning,
        t.j.display_kind as display_kind,
        coalesce(t.j._compressed_summary = 1, false) as compressed_summary,
        case when t.rtype = 'session' then t.j.input_tokens end as input_tokens,
        case when t.rtype = 'session' then t.j.output_tokens end as output_tokens,
        case when t.rtype = 'session' then t.j.cache_write_tokens end as cache_creation_tokens,
        case when t.rtype = 'session' then t.j.cache_read_tokens end as cache_read_tokens,
        case when t.rtype = 'message' then json_object(
            'role', t.j.role,
            'content', t.j.content,
            'tool_calls', t.j.tool_calls,
            'tool_call_id', t.j.tool_call_id,
            'tool_name', t.j.tool_name,
            'reasoning', coalesce(nullif(t.j.reasoning, ''), nullif(t.j.reasoning_content, '')),
            'finish_reason', t.j.finish_reason
        ) end as content,
        t.line as raw
    from timed as t
    join batch_files as f on f.file_id = t.file_id
),

flagged as (
    select
        * exclude (compressed_summary),
        coalesce(role = 'user' and source_role = 'user' and (
            compressed_summary or coalesce(text like '[CONTEXT COMPACTION%', false)
        ), false) as is_compact_summary
    from typed
),

classified as (
    select
        *,
        case
            when record_type in ('session', 'session_meta') then 'metadata'
            when record_type <> 'message' or role is null then 'unknown'
            when source_role in ('tool', 'function', 'tool_result') then 'tool_result'
            when role = 'user' then 'prompt'
            when role = 'system' then 'system'
            when coalesce(n_calls, 0) > 0 then 'tool_use'
            when text is null and reasoning is not null then 'thinking'
            else 'response'
        end as kind,
        case
            when role <> 'user' or role is null or source_role <> 'user' then null
            when is_compact_summary then 'compact_summary'
            when text like '[ASYNC DELEGATION BATCH COMPLETE%'
                or text like '[IMPORTANT: Background process%' then 'system_reminder'
            when text like '[PRIOR CONTEXT%'
                or text like '[Your active task list was preserved across context compression]%'
                or text like '[Continuing toward your standing goal]%'
                or text like 'Review the conversation above and update the skill library%'
                or text like 'Review the conversation above and consider saving to memory%'
                then 'meta'
            when display_kind is not null then 'meta'
        end as harness_kind
    from flagged
),

final as (
    select
        source, session_id, parent_session_id, file_id, file_epoch, source_file, line_no,
        byte_offset, ingest_run_id, record_type, subtype, message_id, parent_id,
        logical_parent_id, role, timestamp_raw, "timestamp", is_sidechain, is_meta,
        is_compact_summary, agent_id, request_id, api_message_id, model, cwd, git_branch,
        version, text, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens,
        content, raw, kind, harness_kind,
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from classified
)

select * from final
