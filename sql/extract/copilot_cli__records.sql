-- grain: one row per line of a Copilot CLI session: an event of events.jsonl (or of a flat
--        <id>.jsonl), the workspace.yaml record, or a line made of a legacy
--        history-session-state document (header, timeline entry or chat message); every line kept
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
-- `content` is a JSON list of normalized blocks {type, text, call_id, name, input, output,
-- is_error, media_type, data_chars} read by copilot_cli__blocks. Lambdas use json_extract*,
-- never the -> operators.
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "type": "VARCHAR", "id": "VARCHAR", "parentId": "VARCHAR", "timestamp": "VARCHAR",
            "_legacy": "VARCHAR", "_session": "VARCHAR",
            "data": {
                "sessionId": "VARCHAR", "copilotVersion": "VARCHAR", "producer": "VARCHAR",
                "startTime": "VARCHAR", "selectedModel": "VARCHAR", "newModel": "VARCHAR",
                "model": "VARCHAR", "currentModel": "VARCHAR",
                "context": {"cwd": "VARCHAR", "gitRoot": "VARCHAR", "branch": "VARCHAR"},
                "cwd": "VARCHAR", "branch": "VARCHAR", "summary": "VARCHAR",
                "content": "JSON", "attachments": "JSON",
                "messageId": "VARCHAR", "requestId": "VARCHAR", "interactionId": "VARCHAR",
                "toolRequests": "JSON", "reasoningText": "VARCHAR", "encryptedContent": "VARCHAR",
                "reasoningOpaque": "VARCHAR", "outputTokens": "BIGINT",
                "parentToolCallId": "VARCHAR", "parentAgentTaskId": "VARCHAR",
                "toolCallId": "VARCHAR", "toolName": "VARCHAR", "arguments": "JSON",
                "success": "BOOLEAN", "result": "JSON", "error": "JSON",
                "infoType": "VARCHAR", "errorType": "VARCHAR", "message": "VARCHAR",
                "reason": "VARCHAR", "summaryContent": "VARCHAR", "shutdownType": "VARCHAR",
                "modelMetrics": "JSON",
                "tokenDetails": {
                    "input": {"tokenCount": "BIGINT"}, "output": {"tokenCount": "BIGINT"},
                    "cache_read": {"tokenCount": "BIGINT"}, "cache_write": {"tokenCount": "BIGINT"}
                },
                "id": "VARCHAR", "created_at": "VARCHAR", "updated_at": "VARCHAR",
                "git_root": "VARCHAR"
            },
            "sessionId": "VARCHAR", "startTime": "VARCHAR",
            "text": "VARCHAR", "callId": "VARCHAR", "name": "VARCHAR", "toolTitle": "VARCHAR",
            "arguments": "JSON", "result": {"type": "VARCHAR", "log": "VARCHAR"},
            "message": {"role": "VARCHAR", "content": "JSON", "tool_calls": "JSON",
                        "tool_call_id": "VARCHAR", "name": "VARCHAR"}
        }') as j
    from lines as l
),

-- a JSON value as text: a string as itself, an array of content parts as their joined text
texts as (
    select
        *,
        case
            when json_type(j.data.content) = 'VARCHAR' then j.data.content ->> '$'
            when json_type(j.data.content) = 'ARRAY' then array_to_string(list_filter(
                json_extract_string(j.data.content, '$[*].text'), lambda t: t is not null), chr(10))
        end as data_text,
        case
            when json_type(j.message.content) = 'VARCHAR' then j.message.content ->> '$'
            when json_type(j.message.content) = 'ARRAY' then array_to_string(list_filter(
                json_extract_string(j.message.content, '$[*].text'), lambda t: t is not null), chr(10))
        end as chat_text,
        case when json_type(j.data.toolRequests) = 'ARRAY' then json_transform(j.data.toolRequests,
            '[{"toolCallId": "VARCHAR", "name": "VARCHAR", "arguments": "JSON"}]') end as requests,
        case when json_type(j.message.tool_calls) = 'ARRAY' then json_transform(j.message.tool_calls,
            '[{"id": "VARCHAR", "function": {"name": "VARCHAR", "arguments": "JSON"}}]') end as chat_calls,
        case when json_type(j.data.attachments) = 'ARRAY' then json_transform(j.data.attachments,
            '[{"type": "VARCHAR", "path": "VARCHAR", "displayName": "VARCHAR"}]') end as attachments,
        -- a tool's output: {content, detailedContent}, or plain text
        case
            when json_type(j.data.result) = 'VARCHAR' then j.data.result ->> '$'
            when json_type(j.data.result) = 'OBJECT' then coalesce(
                j.data.result ->> '$.content', j.data.result ->> '$.detailedContent')
        end as result_text,
        case
            when json_type(j.data.error) = 'VARCHAR' then j.data.error ->> '$'
            when json_type(j.data.error) = 'OBJECT' then j.data.error ->> '$.message'
        end as error_text
    from parsed
),

-- call ids an assistant message (or a legacy tool_call_requested entry) of this batch asked for
requested as (
    select distinct file_id, call_id
    from (
        select file_id, unnest(json_extract_string(j.data.toolRequests, '$[*].toolCallId')) as call_id
        from parsed
        where j.type = 'assistant.message' and json_type(j.data.toolRequests) = 'ARRAY'
        union all
        select file_id, j.callId as call_id
        from parsed
        where j._legacy = 'timeline' and j.type = 'tool_call_requested'
    )
    where call_id is not null
),

blocks as (
    select
        t.*,
        r.call_id is not null as was_requested,
        case
            when t.j.type = 'user.message' then list_concat(
                case when t.data_text is not null and t.data_text <> ''
                    then [json_object('type', 'text', 'text', t.data_text)] end,
                list_transform(t.attachments, lambda a: json_object(
                    'type', 'attachment', 'text', coalesce(a.path, a.displayName), 'name', a.type)))
            when t.j.type = 'assistant.message' then list_concat(
                case when t.j.data.reasoningText is not null and t.j.data.reasoningText <> ''
                    then [json_object('type', 'thinking', 'text', t.j.data.reasoningText)]
                    when coalesce(t.j.data.encryptedContent, t.j.data.reasoningOpaque) is not null
                    then [json_object('type', 'redacted_thinking', 'data_chars',
                        strlen(coalesce(t.j.data.encryptedContent, t.j.data.reasoningOpaque)))] end,
                case when t.data_text is not null and t.data_text <> ''
                    then [json_object('type', 'text', 'text', t.data_text)] end,
                list_transform(t.requests, lambda q: json_object(
                    'type', 'tool_use', 'call_id', q.toolCallId, 'name', q.name,
                    'input', case when json_type(q.arguments) = 'VARCHAR' and json_valid(json_extract_string(q.arguments, '$'))
                        then json(json_extract_string(q.arguments, '$')) else q.arguments end)))
            when t.j.type = 'assistant.reasoning' and t.data_text is not null
                then [json_object('type', 'thinking', 'text', t.data_text)]
            when t.j.type = 'tool.execution_start' and r.call_id is null then [json_object(
                'type', 'tool_use', 'call_id', t.j.data.toolCallId, 'name', t.j.data.toolName,
                'input', t.j.data.arguments)]
            when t.j.type = 'tool.execution_complete' then [json_object(
                'type', 'tool_result', 'call_id', t.j.data.toolCallId, 'name', t.j.data.toolName,
                'output', coalesce(t.result_text, t.error_text),
                'is_error', coalesce(not t.j.data.success, t.error_text is not null))]
            when t.j.type = 'system.message' and t.data_text is not null
                then [json_object('type', 'text', 'text', t.data_text)]
            when t.j.type = 'session.compaction_complete'
                and coalesce(t.j.data.summaryContent, t.j.data.summary) is not null
                then [json_object('type', 'text', 'text', coalesce(t.j.data.summaryContent, t.j.data.summary))]
            -- legacy history-session-state lines
            when t.j._legacy = 'timeline' and t.j.type in ('user', 'copilot') and t.j.text is not null
                then [json_object('type', 'text', 'text', t.j.text)]
            when t.j._legacy = 'timeline' and t.j.type = 'tool_call_requested' then [json_object(
                'type', 'tool_use', 'call_id', t.j.callId, 'name', coalesce(t.j.name, t.j.toolTitle),
                'input', t.j.arguments)]
            when t.j._legacy = 'timeline' and t.j.type = 'tool_call_completed' then list_concat(
                case when r.call_id is null and coalesce(t.j.name, t.j.toolTitle) is not null then [json_object(
                    'type', 'tool_use', 'call_id', t.j.callId, 'name', coalesce(t.j.name, t.j.toolTitle),
                    'input', t.j.arguments)] end,
                [json_object('type', 'tool_result', 'call_id', t.j.callId, 'output', t.j.result.log,
                    'is_error', coalesce(t.j.result.type not in ('success', 'ok'), false))])
            when t.j._legacy = 'chat' and t.j.message.role = 'tool' then [json_object(
                'type', 'tool_result', 'call_id', t.j.message.tool_call_id, 'name', t.j.message.name,
                'output', t.chat_text, 'is_error', false)]
            when t.j._legacy = 'chat' then list_concat(
                case when t.chat_text is not null and t.chat_text <> ''
                    then [json_object('type', 'text', 'text', t.chat_text)] end,
                list_transform(t.chat_calls, lambda c: json_object(
                    'type', 'tool_use', 'call_id', c.id, 'name', c.function.name,
                    'input', case when json_type(c.function.arguments) = 'VARCHAR'
                            and json_valid(json_extract_string(c.function.arguments, '$'))
                        then json(json_extract_string(c.function.arguments, '$')) else c.function.arguments end)))
        end as block_list
    from texts as t
    left join requested as r
        on r.file_id = t.file_id
        and r.call_id = coalesce(case when t.j._legacy is null then t.j.data.toolCallId end, t.j.callId)
),

typed as (
    select
        f.source,
        coalesce(b.j._session, f.session_hint, f.file_stem) as session_id,
        f.parent_session_hint as parent_session_id,
        b.file_id,
        f.file_epoch,
        f.source_file,
        b.line_no,
        b.byte_offset,
        f.run_id as ingest_run_id,
        coalesce(b.j.type, 'unknown') as record_type,
        b.j,
        b.data_text,
        b.chat_text,
        b.block_list,
        coalesce(len(b.requests), 0) + coalesce(len(b.chat_calls), 0) as n_calls,
        b.line,
        case
            when b.j._legacy = 'header' then b.j.startTime
            when b.j.type = 'workspace' then coalesce(b.j.data.created_at, b.j.data.updated_at)
            else b.j.timestamp
        end as ts_raw,
        -- the sum of one token field over every model of session.shutdown's modelMetrics
        case when json_type(b.j.data.modelMetrics) = 'OBJECT' then struct_pack(
            input := list_sum(list_transform(json_extract_string(b.j.data.modelMetrics, '$.*.usage.inputTokens'),
                lambda v: try_cast(v as bigint))),
            cache_read := list_sum(list_transform(json_extract_string(b.j.data.modelMetrics, '$.*.usage.cacheReadTokens'),
                lambda v: try_cast(v as bigint))),
            cache_write := list_sum(list_transform(json_extract_string(b.j.data.modelMetrics, '$.*.usage.cacheWriteTokens'),
                lambda v: try_cast(v as bigint)))
        ) end as metrics
    from blocks as b
    join batch_files as f on f.file_id = b.file_id
),

classified as (
    select
        *,
        case
            when j._legacy = 'header' then 'metadata'
            when j._legacy = 'timeline' then case j.type
                when 'user' then 'prompt'
                when 'copilot' then 'response'
                when 'tool_call_requested' then 'tool_use'
                when 'tool_call_completed' then 'tool_result'
                else coalesce(regexp_replace(lower(j.type), '[^a-z0-9]+', '_', 'g'), 'unknown')
            end
            when j._legacy = 'chat' then case j.message.role
                when 'user' then 'prompt'
                when 'assistant' then case when n_calls > 0 then 'tool_use' else 'response' end
                when 'tool' then 'tool_result'
                when 'system' then 'system'
                else 'unknown'
            end
            when record_type = 'user.message' then 'prompt'
            when record_type = 'assistant.message' then case
                when n_calls > 0 then 'tool_use'
                when coalesce(data_text, '') = '' and len(block_list) > 0 then 'thinking'
                else 'response'
            end
            when record_type = 'assistant.reasoning' then 'thinking'
            when record_type = 'tool.execution_complete' then 'tool_result'
            when record_type = 'system.message' then 'system'
            when record_type = 'session.compaction_complete' then 'compact_boundary'
            when record_type in ('session.start', 'session.resume', 'session.context_changed',
                                 'session.model_change', 'workspace') then 'metadata'
            when record_type in (
                'session.info', 'session.error', 'session.warning', 'session.truncation',
                'session.compaction_start', 'session.usage_checkpoint', 'session.shutdown',
                'session.auto_mode_resolved', 'session.task_complete', 'session.handoff',
                'session.idle', 'session.tools_updated', 'session.title_changed',
                'assistant.turn_start', 'assistant.turn_end', 'assistant.message_delta',
                'assistant.intent', 'assistant.usage', 'tool.execution_start',
                'tool.execution_partial_result', 'tool.execution_progress', 'tool.user_requested',
                'subagent.started', 'subagent.completed', 'subagent.failed', 'subagent.selected',
                'hook.start', 'hook.end', 'system.notification', 'abort', 'user.message_queued')
                then regexp_replace(record_type, '[^a-z0-9]+', '_', 'g')
            else 'unknown'
        end as kind,
        case
            when j._legacy = 'timeline' and j.type = 'user' then 'user'
            when j._legacy = 'timeline' and j.type in ('copilot', 'tool_call_requested') then 'assistant'
            when j._legacy = 'timeline' and j.type = 'tool_call_completed' then 'user'
            when j._legacy = 'chat' and j.message.role in ('user', 'tool') then 'user'
            when j._legacy = 'chat' and j.message.role in ('assistant', 'system') then j.message.role
            when j._legacy is not null then null
            when record_type in ('user.message', 'tool.execution_complete') then 'user'
            when record_type in ('assistant.message', 'assistant.reasoning') then 'assistant'
            when record_type in ('system.message', 'session.compaction_complete') then 'system'
        end as role
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
        case
            when record_type = 'session.info' then j.data.infoType
            when record_type = 'session.error' then j.data.errorType
            when record_type = 'session.shutdown' then j.data.shutdownType
            when record_type = 'session.start' then j.data.producer
            when j._legacy = 'chat' then j.message.role
        end as subtype,
        j.id as message_id,
        j.parentId as parent_id,
        null::varchar as logical_parent_id,
        role,
        ts_raw as timestamp_raw,
        timezone('UTC', try_cast(ts_raw as timestamptz)) as "timestamp",
        coalesce(j.data.parentToolCallId is not null or j.data.parentAgentTaskId is not null, false)
            as is_sidechain,
        false as is_meta,
        record_type = 'session.compaction_complete' as is_compact_summary,
        j.data.parentToolCallId as agent_id,
        case when record_type = 'assistant.message' then j.data.requestId end as request_id,
        case when record_type = 'assistant.message' then j.data.messageId end as api_message_id,
        case
            when record_type in ('session.start', 'session.resume') then j.data.selectedModel
            when record_type = 'session.model_change' then j.data.newModel
            when record_type = 'session.shutdown' then j.data.currentModel
            when record_type in ('assistant.message', 'assistant.turn_start') then j.data.model
        end as model,
        case
            when record_type in ('session.start', 'session.resume', 'session.context_changed')
                then nullif(coalesce(j.data.context.cwd, j.data.cwd, j.data.context.gitRoot), '')
            when record_type = 'workspace' then nullif(j.data.cwd, '')
        end as cwd,
        case
            when record_type in ('session.start', 'session.resume', 'session.context_changed')
                then nullif(coalesce(j.data.context.branch, j.data.branch), '')
            when record_type = 'workspace' then nullif(j.data.branch, '')
        end as git_branch,
        case when record_type = 'session.start' then j.data.copilotVersion end as version,
        case
            when record_type = 'workspace' then nullif(trim(j.data.summary), '')
            when j._legacy = 'timeline' and role is not null then nullif(j.text, '')
            when j._legacy = 'timeline' then j.text
            when j._legacy = 'chat' and j.message.role = 'tool' then null
            when j._legacy = 'chat' then nullif(chat_text, '')
            when record_type = 'session.compaction_complete' then coalesce(j.data.summaryContent, j.data.summary)
            when record_type in ('session.info', 'session.error', 'session.warning') then j.data.message
            when record_type = 'abort' then j.data.reason
            when record_type in ('user.message', 'assistant.message', 'assistant.reasoning', 'system.message',
                                 'system.notification')
                then nullif(data_text, '')
        end as text,
        -- modelMetrics' inputTokens include the cache reads and writes: the uncached rest is kept
        case when record_type = 'session.shutdown' then coalesce(
            case when metrics.input is not null then greatest(
                metrics.input - coalesce(metrics.cache_read, 0) - coalesce(metrics.cache_write, 0), 0)::bigint end,
            j.data.tokenDetails.input.tokenCount) end as input_tokens,
        case when record_type = 'assistant.message' then j.data.outputTokens end as output_tokens,
        case when record_type = 'session.shutdown'
            then coalesce(metrics.cache_write::bigint, j.data.tokenDetails.cache_write.tokenCount) end
            as cache_creation_tokens,
        case when record_type = 'session.shutdown'
            then coalesce(metrics.cache_read::bigint, j.data.tokenDetails.cache_read.tokenCount) end
            as cache_read_tokens,
        case when block_list is not null and len(block_list) > 0 then to_json(block_list) end as content,
        line as raw,
        kind,
        null::varchar as harness_kind,
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from classified
)

-- context lines from before the batch (copilot_cli__context.sql: requests not yet started)
-- come with negative line numbers: they name calls for `requested`, and were loaded before
select * from final
where line_no > 0
