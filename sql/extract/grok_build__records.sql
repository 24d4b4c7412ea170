-- grain: one row per line made of a Grok Build session folder: an updates.jsonl line (one ACP
--        session/update), a chat_history.jsonl line, summary.json, or a compaction checkpoint
--        document; every line kept (a chunk continuing a message is a row of kind 'chunk')
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id).
--        An updates.jsonl line comes wrapped by adapters/grok_build.to_lines as {"cv": {offset,
--        head, body, images, model}, "line": "<the original line>"}: whether it starts a
--        message (a run of chunks) and, if so, the run's text, images and model, which the
--        replay of the whole log found. Every fact a row needs is then on its own line.
with wrapped as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        case when starts_with(l.line, '{"cv": {') then json_transform(l.line, '{
            "cv": {"offset": "BIGINT", "head": "BOOLEAN", "body": "VARCHAR", "images": ["JSON"],
                   "model": "VARCHAR"},
            "line": "VARCHAR"
        }') end as w
    from lines as l
),

parsed as (
    select
        file_id,
        line_no,
        case when w.line is null then byte_offset else w.cv."offset" end as byte_offset,
        coalesce(w.line, line) as line,
        w.cv as cv,
        json_transform(coalesce(w.line, line), '{
            "timestamp": "DOUBLE", "method": "VARCHAR",
            "params": {"sessionId": "VARCHAR", "update": "JSON",
                       "_meta": {"eventId": "VARCHAR", "agentTimestampMs": "BIGINT", "modelId": "VARCHAR"}},
            "update": "JSON", "sessionUpdate": "VARCHAR",
            "type": "VARCHAR", "content": "JSON", "tool_calls": "JSON", "tool_call_id": "VARCHAR",
            "model_id": "VARCHAR", "synthetic_reason": "VARCHAR", "prompt_index": "BIGINT",
            "summary": "JSON", "id": "VARCHAR", "kind": "JSON",
            "info": {"id": "VARCHAR", "cwd": "VARCHAR"}, "session_summary": "VARCHAR",
            "generated_title": "VARCHAR", "created_at": "JSON", "head_branch": "VARCHAR",
            "current_model_id": "VARCHAR", "model": "VARCHAR", "session_kind": "VARCHAR",
            "agent_name": "VARCHAR", "parent_session_id": "VARCHAR",
            "checkpoint_id": "VARCHAR"
        }') as j
    from wrapped
),

shaped as (
    select
        p.*,
        f.source,
        f.file_epoch,
        f.source_file,
        f.session_hint,
        f.parent_session_hint,
        f.run_id,
        case
            when regexp_matches(f.source_file, '[/\\]compaction_checkpoints[/\\][^/\\]+$') then 'checkpoint'
            when f.file_stem = 'summary' then 'summary'
            when f.file_stem = 'chat_history' then 'chat'
            when j.params.update is not null or j.update is not null or j.sessionUpdate is not null then 'update'
            when j.type is not null then 'chat'
            else 'update'
        end as lane,
        coalesce(
            f.session_hint,
            case when regexp_matches(f.source_file, '[/\\]compaction_checkpoints[/\\][^/\\]+$')
                then regexp_extract(f.source_file, '([^/\\]+)[/\\]compaction_checkpoints[/\\][^/\\]+$', 1)
                else regexp_extract(f.source_file, '([^/\\]+)[/\\][^/\\]+$', 1)
            end
        ) as sid,
        -- the cwd group folder: a percent-encoded absolute path
        case when line_no = 1 then regexp_extract(f.source_file, '([^/\\]+)[/\\][^/\\]+[/\\][^/\\]+$', 1) end
            as group_folder,
        coalesce(j.params.update, j.update, case when j.sessionUpdate is not null then line::json end) as u
    from parsed as p
    join batch_files as f on f.file_id = p.file_id
),

updates as (
    select
        *,
        json_transform(u, '{
            "sessionUpdate": "VARCHAR", "content": "JSON", "toolCallId": "VARCHAR", "title": "VARCHAR",
            "kind": "VARCHAR", "status": "VARCHAR", "rawInput": "JSON", "rawOutput": "JSON",
            "encrypted_content": "VARCHAR", "checkpoint_id": "VARCHAR",
            "_meta": {"modelId": "VARCHAR", "agentTimestampMs": "BIGINT", "promptIndex": "BIGINT",
                      "eventId": "VARCHAR"}
        }') as up
    from shaped
),

chunks as (
    select
        *,
        up.sessionUpdate as ukind,
        coalesce(lane = 'update' and up.sessionUpdate in ('user_message_chunk', 'agent_message_chunk',
                                                          'agent_thought_chunk'), false) as is_chunk,
        -- the first chunk of a run (to_lines): it carries the run's message
        coalesce(lane = 'update' and cv.head, false) as is_head
    from updates
),

-- chat_history.jsonl content and calls, decoded once
chat as (
    select
        n.*,
        case when is_head then cv.body end as run_body,
        case when is_head then cv.images end as run_images,
        case when is_head then cv.model end as run_model,
        case when json_type(j.content) = 'ARRAY' then json_transform(j.content,
            '[{"type": "VARCHAR", "text": "VARCHAR", "url": "VARCHAR"}]') end as parts,
        case when json_type(j.tool_calls) = 'ARRAY' then json_transform(j.tool_calls,
            '[{"id": "VARCHAR", "name": "VARCHAR", "arguments": "VARCHAR"}]') end as calls,
        case when json_type(j.summary) = 'ARRAY' then json_transform(j.summary,
            '[{"type": "VARCHAR", "text": "VARCHAR"}]') end as summary_parts,
        case when json_type(up.content) = 'ARRAY' then json_transform(up.content,
            '[{"type": "VARCHAR", "content": {"type": "VARCHAR", "text": "VARCHAR"}, "path": "VARCHAR",
              "text": "VARCHAR"}]') end as tool_content
    from chunks as n
),

texts as (
    select
        *,
        case
            when json_type(j.content) = 'VARCHAR' then j.content ->> '$'
            else nullif(array_to_string(list_filter(list_transform(parts,
                lambda x: case when x.type = 'text' then x.text end), lambda t: t is not null), chr(10)), '')
        end as chat_text,
        nullif(array_to_string(list_filter(list_transform(summary_parts,
            lambda x: x.text), lambda t: t is not null), chr(10)), '') as reasoning_text,
        coalesce(
            nullif(array_to_string(list_filter(list_transform(tool_content, lambda x: case
                when x.type = 'content' then x.content.text
                when x.type = 'diff' then '[diff: ' || coalesce(x.path, 'file') || ']'
                when x.type = 'terminal' then '[terminal output]'
                else x.text end), lambda t: t is not null), chr(10)), ''),
            case when json_type(up.rawOutput) = 'VARCHAR' then up.rawOutput ->> '$'
                 when up.rawOutput is not null and json_type(up.rawOutput) <> 'NULL' then up.rawOutput::varchar end
        ) as tool_output
    from chat
),

typed as (
    select
        source,
        sid as session_id,
        coalesce(parent_session_hint, case when lane = 'summary' then nullif(j.parent_session_id, '') end)
            as parent_session_id,
        file_id,
        file_epoch,
        source_file,
        line_no,
        byte_offset,
        run_id as ingest_run_id,
        case lane
            when 'update' then coalesce(ukind, 'unknown')
            when 'chat' then coalesce(j.type, 'unknown')
            when 'summary' then 'summary'
            when 'checkpoint' then 'compaction_checkpoint'
        end as record_type,
        case lane
            when 'update' then j.method
            when 'chat' then j.synthetic_reason
            when 'summary' then j.session_kind
        end as subtype,
        case lane
            when 'update' then coalesce(j.params._meta.eventId, up._meta.eventId)
            when 'chat' then j.id
            when 'summary' then j.info.id
            when 'checkpoint' then j.checkpoint_id
        end as message_id,
        null::varchar as parent_id,
        null::varchar as logical_parent_id,
        case
            when lane = 'update' then case
                when is_head and ukind = 'user_message_chunk' then 'user'
                when is_head then 'assistant'
                when ukind = 'tool_call' then 'assistant'
                when ukind = 'tool_call_update' and (tool_output is not null or up.status = 'failed') then 'user'
            end
            when lane = 'chat' then case j.type
                when 'user' then 'user'
                when 'tool_result' then 'user'
                when 'assistant' then 'assistant'
                when 'reasoning' then 'assistant'
                when 'backend_tool_call' then 'assistant'
                when 'system' then 'system'
                when 'developer' then 'system'
            end
        end as role,
        case
            when lane = 'update' then coalesce(
                cast(coalesce(j.params._meta.agentTimestampMs, up._meta.agentTimestampMs) as varchar),
                cast(j.timestamp as varchar))
            when lane in ('summary', 'checkpoint') then case
                when json_type(j.created_at) = 'VARCHAR' then j.created_at ->> '$'
                else j.created_at::varchar end
        end as timestamp_raw,
        case
            when lane = 'update' and coalesce(j.params._meta.agentTimestampMs, up._meta.agentTimestampMs) is not null
                then make_timestamp(coalesce(j.params._meta.agentTimestampMs, up._meta.agentTimestampMs) * 1000)
            when lane = 'update' and j.timestamp is not null then make_timestamp((j.timestamp * 1000000)::bigint)
            when lane in ('summary', 'checkpoint') and json_type(j.created_at) in ('BIGINT', 'UBIGINT', 'DOUBLE')
                then make_timestamp((j.created_at::double * 1000000)::bigint)
            when lane in ('summary', 'checkpoint') and json_type(j.created_at) = 'VARCHAR' then case
                when regexp_matches(j.created_at ->> '$', '(Z|z|[+-]\d\d:?\d\d)$')
                    then timezone('UTC', try_cast(j.created_at ->> '$' as timestamptz))
                else try_cast(j.created_at ->> '$' as timestamp)
            end
        end as "timestamp",
        parent_session_hint is not null or (lane = 'summary' and j.session_kind = 'subagent') as is_sidechain,
        lane = 'chat' and j.type = 'user' and j.synthetic_reason is not null as is_meta,
        coalesce(lane = 'chat' and j.synthetic_reason = 'compaction_meta', false) as is_compact_summary,
        case when lane = 'summary' then j.agent_name end as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case
            when lane = 'update' and is_head and ukind <> 'user_message_chunk' then run_model
            when lane = 'chat' then nullif(j.model_id, '')
            when lane = 'summary' then nullif(coalesce(j.current_model_id, j.model), '')
        end as model,
        case
            when lane = 'summary' then coalesce(nullif(j.info.cwd, ''),
                case when starts_with(upper(group_folder), '%2F') then url_decode(group_folder) end)
            when lane in ('update', 'chat') and starts_with(upper(group_folder), '%2F') then url_decode(group_folder)
        end as cwd,
        case when lane = 'summary' then nullif(j.head_branch, '') end as git_branch,
        null::varchar as version,
        case
            when lane = 'update' and is_head and ukind <> 'agent_thought_chunk' then run_body
            when lane = 'update' and ukind = 'session_info_update' then nullif(trim(u ->> '$.title'), '')
            when lane = 'chat' and j.type in ('user', 'assistant', 'system', 'developer') then nullif(chat_text, '')
            when lane = 'summary' then coalesce(nullif(trim(j.generated_title), ''), nullif(trim(j.session_summary), ''))
        end as text,
        null::bigint as input_tokens,
        null::bigint as output_tokens,
        null::bigint as cache_creation_tokens,
        null::bigint as cache_read_tokens,
        -- one normalized block list (see normalized__blocks.sql)
        case
            when lane = 'update' and is_head then list_concat(
                case when run_body is not null then [json_object(
                    'type', case when ukind = 'agent_thought_chunk' then 'thinking' else 'text' end,
                    'text', run_body)] end,
                run_images)
            when lane = 'update' and ukind = 'tool_call' then list_concat(
                [json_object('type', 'tool_use', 'call_id', up.toolCallId,
                             'tool_name', coalesce(up.kind, up.title), 'tool_input', up.rawInput)],
                case when tool_output is not null and up.status in ('completed', 'failed') then [json_object(
                    'type', 'tool_result', 'call_id', up.toolCallId, 'tool_name', coalesce(up.kind, up.title),
                    'output_text', tool_output, 'is_error', up.status = 'failed')] end)
            when lane = 'update' and ukind = 'tool_call_update' and (tool_output is not null or up.status = 'failed')
                then [json_object('type', 'tool_result', 'call_id', up.toolCallId,
                    'tool_name', coalesce(up.kind, up.title), 'output_text', tool_output,
                    'is_error', coalesce(up.status = 'failed', false))]
            when lane <> 'chat' then null
            when j.type in ('user', 'assistant', 'system', 'developer') then list_concat(
                case when json_type(j.content) = 'VARCHAR' and nullif(j.content ->> '$', '') is not null
                    then [json_object('type', 'text', 'text', j.content ->> '$')] end,
                list_transform(parts, lambda x: case
                    when x.type = 'text' then json_object('type', 'text', 'text', x.text)
                    when x.type = 'image' then json_object('type', 'image',
                        'media_type', nullif(regexp_extract(x.url, '^data:([^;,]+)', 1), ''),
                        'data_chars', strlen(x.url))
                    else json_object('type', x.type) end),
                list_transform(calls, lambda c: json_object('type', 'tool_use', 'call_id', c.id, 'tool_name', c.name,
                    'tool_input', case when json_valid(c.arguments) then json(c.arguments) else to_json(c.arguments) end)))
            when j.type = 'tool_result' then [json_object('type', 'tool_result', 'call_id', j.tool_call_id,
                'output_text', coalesce(chat_text, j.content::varchar), 'is_error', false)]
            when j.type = 'reasoning' and reasoning_text is not null
                then [json_object('type', 'thinking', 'text', reasoning_text)]
            when j.type = 'backend_tool_call' then [json_object('type', 'server_tool_use',
                'call_id', j.kind ->> '$.id', 'tool_name', j.kind ->> '$.tool_type', 'tool_input', j.kind -> '$.action')]
        end as block_list,
        line as raw,
        lane,
        ukind,
        is_head,
        is_chunk,
        up.encrypted_content as encrypted,
        j.synthetic_reason as synthetic_reason,
        calls,
        j.type as chat_type
    from texts
),

classified as (
    select
        * exclude (block_list, lane, ukind, is_head, is_chunk, encrypted, synthetic_reason, calls, chat_type),
        case when len(block_list) > 0 then block_list end as content,
        case
            when lane = 'summary' then 'metadata'
            when lane = 'checkpoint' then 'compaction_checkpoint'
            when lane = 'chat' then case chat_type
                when 'user' then 'prompt'
                when 'assistant' then case when len(calls) > 0 then 'tool_use' else 'response' end
                when 'tool_result' then 'tool_result'
                when 'reasoning' then 'thinking'
                when 'backend_tool_call' then 'tool_use'
                when 'system' then 'system'
                when 'developer' then 'system'
                else 'unknown'
            end
            when is_head then case ukind when 'user_message_chunk' then 'prompt'
                                         when 'agent_message_chunk' then 'response' else 'thinking' end
            when is_chunk then 'chunk'
            when ukind = 'tool_call' then 'tool_use'
            when ukind = 'tool_call_update' and role = 'user' then 'tool_result'
            when ukind = 'tool_call_update' then 'tool_progress'
            when ukind = 'session_info_update' then 'metadata'
            when ukind = 'compaction_checkpoint' then 'compact_boundary'
            when ukind = 'rewind_marker' then 'rewind'
            when ukind in ('auto_compact_started', 'auto_compact_completed') then 'compaction'
            when ukind = 'current_mode_update' then 'mode'
            when ukind in ('plan', 'hook_execution', 'retry_state', 'available_commands_update', 'usage_update',
                           'config_option_update') then ukind
            else 'unknown'
        end as kind,
        case
            when role is distinct from 'user' then null
            when lane = 'update' and encrypted is not null then 'meta'
            when lane <> 'chat' or chat_type <> 'user' or synthetic_reason is null then null
            when synthetic_reason = 'compaction_meta' then 'compact_summary'
            when synthetic_reason in ('environment_context', 'system_reminder') then synthetic_reason
            when synthetic_reason = 'project_instructions' then 'instructions'
            else 'meta'
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
        is_sidechain,
        is_meta,
        is_compact_summary,
        agent_id,
        request_id,
        api_message_id,
        model,
        cwd,
        git_branch,
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
