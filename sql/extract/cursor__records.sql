-- grain: one row per line of a Cursor store: a composer, bubble or ItemTable entry of a desktop
-- state.vscdb, a meta row or message blob of a cursor-agent store.db (lines made by
-- adapters/cursor.py, told apart by "_src"/"_type"), or one line of an agent transcript
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
--
-- `content` carries every message's blocks already normalized to one shape
-- {type, text, id, name, input, output, is_error, media_type, data_chars}, so
-- cursor__blocks only unnests it. A tool call and its result stored in one bubble become two
-- blocks sharing one call id; a transcript tool_use without an id gets 'line<N>.<i>'.
with parsed as (
    -- the line and its row's value are parsed at once: read as JSON first, the value (most of
    -- a bubble's bytes) was written back out as text only to be parsed again
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "_src": "VARCHAR", "_type": "VARCHAR", "_key": "VARCHAR", "scope": "VARCHAR",
            "composerId": "VARCHAR", "bubbleId": "VARCHAR", "tabId": "VARCHAR",
            "parentComposerId": "VARCHAR", "composerCreatedAt": "JSON", "tabLastSendTime": "JSON",
            "agentId": "VARCHAR", "parentAgentId": "VARCHAR", "reachable": "BOOLEAN",
            "value": {
                "type": "JSON", "role": "VARCHAR", "id": "VARCHAR", "bubbleId": "VARCHAR",
                "text": "VARCHAR", "rawText": "VARCHAR", "content": "JSON",
                "createdAt": "JSON", "timestamp": "JSON", "unixMs": "JSON", "lastSendTime": "JSON",
                "timingInfo": {"clientStartTime": "JSON", "clientRpcSendTime": "JSON", "clientEndTime": "JSON"},
                "toolFormerData": {
                    "name": "VARCHAR", "tool": "JSON", "toolCallId": "VARCHAR", "params": "JSON",
                    "rawArgs": "JSON", "result": "JSON", "status": "VARCHAR", "error": "JSON"
                },
                "thinking": {"text": "VARCHAR"},
                "tokenCount": {"inputTokens": "BIGINT", "outputTokens": "BIGINT"},
                "modelInfo": {"modelName": "VARCHAR"}, "modelConfig": {"modelName": "VARCHAR"},
                "modelType": "VARCHAR", "lastUsedModel": "VARCHAR",
                "workspaceProjectDir": "VARCHAR", "workspaceUris": "JSON",
                "workspaceIdentifier": {"uri": {"fsPath": "VARCHAR", "path": "VARCHAR"}},
                "cwd": "VARCHAR", "requestId": "VARCHAR",
                "name": "VARCHAR", "chatTitle": "VARCHAR", "textDescription": "VARCHAR",
                "unifiedMode": "VARCHAR", "mode": "VARCHAR",
                "subagentInfo": {"parentComposerId": "VARCHAR"}
            },
            "type": "VARCHAR", "role": "VARCHAR", "status": "VARCHAR", "model": "VARCHAR",
            "id": "VARCHAR", "timestamp": "JSON", "createdAt": "JSON", "content": "JSON",
            "message": {"id": "VARCHAR", "role": "VARCHAR", "model": "VARCHAR", "content": "JSON"}
        }') as e
    from lines as l
),

valued as (
    select
        *,
        e.value as v
    from parsed
),

shaped as (
    select
        *,
        case
            when e._src is null then 'transcript'
            when e._type = 'blob_message' then 'ai_message'
            else e._type
        end as shape
    from valued
),

-- the raw block list of a transcript line or an AI-SDK style message blob
raw_blocks as (
    select
        *,
        case shape
            when 'transcript' then coalesce(e.message.content, e.content)
            when 'ai_message' then v.content
        end as msg_content
    from shaped
),

listed as (
    select
        *,
        case when json_type(msg_content) = 'ARRAY' then json_transform(msg_content, '[{
            "type": "VARCHAR", "text": "VARCHAR", "thinking": "VARCHAR",
            "id": "VARCHAR", "name": "VARCHAR", "tool": "VARCHAR", "input": "JSON",
            "toolCallId": "VARCHAR", "toolName": "VARCHAR", "args": "JSON",
            "tool_use_id": "VARCHAR", "content": "JSON", "result": "JSON",
            "is_error": "BOOLEAN", "isError": "BOOLEAN",
            "mimeType": "VARCHAR", "mediaType": "VARCHAR", "data": "VARCHAR", "image": "VARCHAR",
            "source": {"media_type": "VARCHAR", "data": "VARCHAR"},
            "providerOptions": {"cursor": {"modelName": "VARCHAR", "rawToolCallArgs": "VARCHAR"}}
        }]') end as rb
    from raw_blocks
),

normalized as (
    select
        *,
        case
            when json_type(msg_content) = 'VARCHAR' then [{
                'type': 'text', 'text': msg_content ->> '$', 'id': null::varchar,
                'name': null::varchar, 'input': null::json, 'output': null::varchar,
                'is_error': null::boolean, 'media_type': null::varchar, 'data_chars': null::bigint
            }]
            when rb is not null then list_transform(rb, lambda x, i: {
                'type': case
                    when x.type = 'text' then 'text'
                    when x.type in ('thinking', 'reasoning', 'redacted_thinking') then 'thinking'
                    when x.type in ('tool_use', 'tool_call', 'tool-call', 'tool-use') then 'tool_use'
                    when x.type in ('tool_result', 'tool-result') then 'tool_result'
                    when x.type = 'image' then 'image'
                    else coalesce(x.type, 'unknown')
                end,
                'text': case
                    when x.type in ('thinking', 'reasoning', 'redacted_thinking') then coalesce(x.thinking, x.text)
                    when x.type in ('tool_use', 'tool_call', 'tool-call', 'tool-use', 'tool_result', 'tool-result')
                        then null
                    else x.text
                end,
                'id': case
                    when x.type in ('tool_use', 'tool_call', 'tool-call', 'tool-use')
                        then coalesce(x.id, x.toolCallId, 'line' || line_no || '.' || i)
                    when x.type in ('tool_result', 'tool-result') then coalesce(x.tool_use_id, x.toolCallId, x.id)
                end,
                'name': case
                    when x.type in ('tool_use', 'tool_call', 'tool-call', 'tool-use', 'tool_result', 'tool-result')
                        then coalesce(x.name, x.toolName, x.tool)
                end,
                'input': case
                    when x.type in ('tool_use', 'tool_call', 'tool-call', 'tool-use') then coalesce(
                        x.input, x.args,
                        case when json_valid(x.providerOptions.cursor.rawToolCallArgs)
                            then json(x.providerOptions.cursor.rawToolCallArgs) end)
                end,
                'output': case
                    when x.type not in ('tool_result', 'tool-result') then null
                    when json_type(coalesce(x.content, x.result)) = 'VARCHAR'
                        then coalesce(x.content, x.result) ->> '$'
                    when json_type(coalesce(x.content, x.result)) = 'ARRAY' then array_to_string(
                        list_filter(
                            list_transform(
                                json_transform(coalesce(x.content, x.result), '[{"text": "VARCHAR"}]'),
                                lambda p: p.text),
                            lambda t: t is not null),
                        chr(10))
                    else coalesce(x.content, x.result)::varchar
                end,
                'is_error': coalesce(x.is_error, x.isError),
                'media_type': coalesce(x.source.media_type, x.mimeType, x.mediaType),
                'data_chars': case when x.type = 'image'
                    then strlen(coalesce(x.source.data, x.data, x.image)) end
            })
            when shape = 'bubble' then list_filter([
                case when nullif(v.thinking.text, '') is not null then {
                    'type': 'thinking', 'text': v.thinking.text, 'id': null::varchar,
                    'name': null::varchar, 'input': null::json, 'output': null::varchar,
                    'is_error': null::boolean, 'media_type': null::varchar, 'data_chars': null::bigint
                } end,
                case when nullif(coalesce(v.text, v.rawText), '') is not null then {
                    'type': 'text', 'text': coalesce(v.text, v.rawText), 'id': null::varchar,
                    'name': null::varchar, 'input': null::json, 'output': null::varchar,
                    'is_error': null::boolean, 'media_type': null::varchar, 'data_chars': null::bigint
                } end,
                case when v.toolFormerData is not null
                    and coalesce(v.toolFormerData.name, v.toolFormerData.tool ->> '$') is not null then {
                    'type': 'tool_use', 'text': null::varchar,
                    'id': coalesce(v.toolFormerData.toolCallId, e.bubbleId, v.bubbleId),
                    'name': coalesce(v.toolFormerData.name, v.toolFormerData.tool ->> '$'),
                    'input': coalesce(
                        case when json_type(v.toolFormerData.params) = 'VARCHAR'
                            and json_valid(v.toolFormerData.params ->> '$')
                            then json(v.toolFormerData.params ->> '$') end,
                        case when json_type(v.toolFormerData.params) not in ('VARCHAR', 'NULL')
                            then v.toolFormerData.params end,
                        case when json_type(v.toolFormerData.rawArgs) = 'VARCHAR'
                            and json_valid(v.toolFormerData.rawArgs ->> '$')
                            then json(v.toolFormerData.rawArgs ->> '$') end,
                        v.toolFormerData.params),
                    'output': null::varchar, 'is_error': null::boolean,
                    'media_type': null::varchar, 'data_chars': null::bigint
                } end,
                case when v.toolFormerData is not null
                    and coalesce(v.toolFormerData.name, v.toolFormerData.tool ->> '$') is not null
                    and (json_type(v.toolFormerData.result) not in ('NULL')
                        or v.toolFormerData.status is not null) then {
                    'type': 'tool_result', 'text': null::varchar,
                    'id': coalesce(v.toolFormerData.toolCallId, e.bubbleId, v.bubbleId),
                    'name': coalesce(v.toolFormerData.name, v.toolFormerData.tool ->> '$'),
                    'input': null::json,
                    'output': case
                        when json_type(v.toolFormerData.result) = 'VARCHAR' then v.toolFormerData.result ->> '$'
                        when json_type(v.toolFormerData.result) <> 'NULL' then v.toolFormerData.result::varchar
                    end,
                    'is_error': coalesce(
                        lower(v.toolFormerData.status) in ('error', 'failed', 'cancelled', 'canceled',
                                                           'rejected', 'aborted'),
                        false)
                        or coalesce(json_type(v.toolFormerData.error) not in ('NULL'), false),
                    'media_type': null::varchar, 'data_chars': null::bigint
                } end
            ], lambda b: b is not null)
            when shape = 'aichat_bubble' and nullif(coalesce(v.text, v.rawText), '') is not null then [{
                'type': 'text', 'text': coalesce(v.text, v.rawText), 'id': null::varchar,
                'name': null::varchar, 'input': null::json, 'output': null::varchar,
                'is_error': null::boolean, 'media_type': null::varchar, 'data_chars': null::bigint
            }]
        end as bl
    from listed
),

typed as (
    select
        f.source,
        case
            when e._src = 'vscdb' and e._type in ('composer', 'bubble', 'composer_index') then e.composerId
            when e._src = 'vscdb' and e._type in ('aichat_tab', 'aichat_bubble') then e.tabId
            when e._src = 'vscdb' then 'aiService:' || coalesce(e.scope, f.file_stem)
            when e._src is not null then coalesce(e.agentId, f.session_hint, f.file_stem)
            else coalesce(f.session_hint, 'transcript:' || f.file_stem)
        end as session_id,
        case
            when shape = 'composer' then coalesce(v.subagentInfo.parentComposerId, e.parentComposerId)
            when shape = 'bubble' then e.parentComposerId
            when e._src in ('store_db', 'chat_meta_json') then e.parentAgentId
            when e._src is null then f.parent_session_hint
        end as parent_session_id,
        n.file_id,
        f.file_epoch,
        f.source_file,
        n.line_no,
        n.byte_offset,
        f.run_id as ingest_run_id,
        case
            when shape = 'transcript' then coalesce(e.type, e.role, 'unknown')
            when shape = 'ai_message' then coalesce(v.role, 'blob_message')
            else coalesce(e._type, 'unknown')
        end as record_type,
        case
            when shape = 'composer' then v.unifiedMode
            when shape = 'chat_meta' then v.mode
            when shape = 'transcript' and e.type is not null then e.status
        end as subtype,
        case
            when shape = 'bubble' then coalesce(e.bubbleId, v.bubbleId)
            when shape = 'aichat_bubble' then coalesce(v.id, v.bubbleId)
            when shape = 'ai_message' then e._key
            when shape = 'transcript' then coalesce(e.id, e.message.id)
        end as message_id,
        case
            when shape = 'bubble' then case v.type ->> '$' when '1' then 'user' when '2' then 'assistant' end
            when shape = 'aichat_bubble' then case
                when lower(v.type ->> '$') in ('user', 'human') then 'user'
                when lower(v.type ->> '$') in ('ai', 'assistant', 'bot') then 'assistant'
            end
            when shape = 'ai_message' and coalesce(e.reachable, true) then case
                when lower(v.role) in ('user', 'tool') then 'user'
                when lower(v.role) = 'assistant' then 'assistant'
                when lower(v.role) = 'system' then 'system'
            end
            when shape = 'transcript' then case
                when lower(coalesce(e.role, e.message.role)) in ('user', 'human') then 'user'
                when lower(coalesce(e.role, e.message.role)) in ('assistant', 'model') then 'assistant'
                when lower(coalesce(e.role, e.message.role)) = 'system' then 'system'
            end
        end as role,
        case
            when shape = 'bubble' then coalesce(
                v.createdAt ->> '$', v.timingInfo.clientStartTime ->> '$',
                v.timingInfo.clientRpcSendTime ->> '$', v.timingInfo.clientEndTime ->> '$')
            when shape in ('composer', 'composer_index', 'chat_meta', 'chat_meta_json') then v.createdAt ->> '$'
            when shape = 'aichat_tab' then v.lastSendTime ->> '$'
            when shape = 'aichat_bubble' then coalesce(v.timestamp ->> '$', v.createdAt ->> '$')
            when shape = 'generation_history' then v.unixMs ->> '$'
            when shape = 'transcript' then coalesce(e.timestamp ->> '$', e.createdAt ->> '$')
        end as timestamp_raw,
        coalesce(e.composerCreatedAt, e.tabLastSendTime) ->> '$' as context_time_raw,
        case when shape = 'transcript' then f.file_stem end as transcript_stem,
        case
            when shape in ('transcript', 'bubble', 'aichat_bubble', 'ai_message') then nullif(array_to_string(
                list_filter(
                    list_transform(bl, lambda b: case when b.type not in ('thinking', 'tool_use', 'tool_result')
                        then b.text end),
                    lambda t: t is not null),
                chr(10)), '')
            when shape in ('composer', 'composer_index', 'chat_meta') then v.name
            when shape = 'aichat_tab' then v.chatTitle
            when shape = 'prompt_history' then v.text
            when shape = 'generation_history' then v.textDescription
        end as full_text,
        case
            when shape = 'composer' then v.modelConfig.modelName
            when shape = 'chat_meta' then v.lastUsedModel
            when shape = 'bubble' then v.modelInfo.modelName
            when shape = 'aichat_bubble' then v.modelType
            when shape = 'transcript' then coalesce(e.model, e.message.model)
            when shape = 'ai_message' then list_filter(
                list_transform(rb, lambda x: x.providerOptions.cursor.modelName),
                lambda m: m is not null)[1]
        end as model,
        case
            when shape = 'composer' then coalesce(v.workspaceIdentifier.uri.fsPath, v.workspaceIdentifier.uri.path)
            when shape = 'bubble' then coalesce(
                nullif(v.workspaceProjectDir, ''),
                case when (v.workspaceUris ->> '$[0]') like 'file://%'
                    then url_decode(regexp_replace(v.workspaceUris ->> '$[0]', '^file://[^/]*', '')) end)
            when shape in ('chat_meta', 'chat_meta_json') then v.cwd
        end as cwd,
        case when shape = 'bubble' then v.requestId end as request_id,
        case when shape = 'bubble' then v.tokenCount.inputTokens end as input_tokens,
        case when shape = 'bubble' then v.tokenCount.outputTokens end as output_tokens,
        shape,
        e._type as line_type,
        v.role as value_role,
        list_transform(bl, lambda b: b.type) as block_types,
        to_json(bl) as content,
        n.line as raw
    from normalized as n
    join batch_files as f on f.file_id = n.file_id
),

timed as (
    select
        * exclude (context_time_raw, full_text),
        case
            when regexp_full_match(timestamp_raw, '\d{12,}(\.\d*)?')
                then try(make_timestamp(try_cast(try_cast(timestamp_raw as double) * 1000 as bigint)))
            when regexp_full_match(timestamp_raw, '\d{9,11}(\.\d*)?')
                then try(make_timestamp(try_cast(try_cast(timestamp_raw as double) * 1000000 as bigint)))
            else timezone('UTC', try_cast(timestamp_raw as timestamptz))
        end as "timestamp",
        case
            when regexp_full_match(context_time_raw, '\d{12,}(\.\d*)?')
                then try(make_timestamp(try_cast(try_cast(context_time_raw as double) * 1000 as bigint)))
            else timezone('UTC', try_cast(context_time_raw as timestamptz))
        end as context_time,
        case
            when role = 'user' and full_text like '%<user_query>%</user_query>%'
                then regexp_extract(full_text, '(?s)<user_query>\s*(.*?)\s*</user_query>', 1)
            else full_text
        end as text,
        full_text
    from typed
),

classified as (
    select
        *,
        case
            when shape in ('composer', 'composer_index', 'aichat_tab', 'chat_meta', 'chat_meta_json') then 'metadata'
            when shape in ('prompt_history', 'generation_history', 'missing_blob') then shape
            when shape = 'transcript' and record_type = 'turn_ended' then 'turn_ended'
            when shape = 'ai_message' and role is null and value_role is not null then 'unreachable_message'
            when role = 'user' and (lower(value_role) = 'tool' or list_contains(block_types, 'tool_result'))
                then 'tool_result'
            when role = 'user' then 'prompt'
            when role = 'assistant' and list_contains(block_types, 'tool_use') then 'tool_use'
            when role = 'assistant'
                and len(block_types) > 0
                and len(list_filter(block_types, lambda t: t <> 'thinking')) = 0 then 'thinking'
            when role = 'assistant' then 'response'
            when role = 'system' then 'system'
            else 'unknown'
        end as kind
    from timed
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
        null::varchar as parent_id,
        null::varchar as logical_parent_id,
        role,
        timestamp_raw,
        "timestamp",
        parent_session_id is not null as is_sidechain,
        false as is_meta,
        false as is_compact_summary,
        case
            when parent_session_id is null then null
            when shape = 'transcript' then transcript_stem
            else session_id
        end as agent_id,
        request_id,
        null::varchar as api_message_id,
        model,
        cwd,
        null::varchar as git_branch,
        null::varchar as version,
        text,
        input_tokens,
        output_tokens,
        null::bigint as cache_creation_tokens,
        null::bigint as cache_read_tokens,
        content,
        raw,
        kind,
        case
            when role <> 'user' or role is null or kind <> 'prompt' then null
            when full_text like '%<user_query>%' then null
            when full_text like '<system_reminder>%' or full_text like '<system-reminder>%'
                then 'system_reminder'
            when full_text like '<user_info>%' then 'environment_context'
        end as harness_kind,
        coalesce(
            strftime("timestamp", '%Y-%m'),
            strftime(context_time, '%Y-%m')
        ) as month
    from classified
)

select * from final
