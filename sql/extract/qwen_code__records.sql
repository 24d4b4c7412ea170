-- grain: one row per complete JSONL line of a Qwen Code chat transcript (every record kept)
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
-- Lambdas here use json_extract/json_extract_string, never the -> operators (DuckDB would
-- read those as lambda arrows).
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "uuid": "VARCHAR", "parentUuid": "VARCHAR", "sessionId": "VARCHAR",
            "timestamp": "VARCHAR", "type": "VARCHAR", "subtype": "VARCHAR",
            "cwd": "VARCHAR", "version": "VARCHAR", "gitBranch": "VARCHAR",
            "provenance": "VARCHAR", "model": "VARCHAR",
            "agentId": "VARCHAR", "isSidechain": "BOOLEAN",
            "message": {"role": "VARCHAR", "parts": "JSON"},
            "usageMetadata": {
                "promptTokenCount": "BIGINT", "candidatesTokenCount": "BIGINT",
                "cachedContentTokenCount": "BIGINT", "thoughtsTokenCount": "BIGINT",
                "totalTokenCount": "BIGINT"
            },
            "toolCallResult": {"callId": "VARCHAR", "status": "VARCHAR"},
            "systemPayload": {
                "displayText": "VARCHAR", "customTitle": "VARCHAR",
                "parentSessionId": "VARCHAR", "modelId": "VARCHAR",
                "phase": "VARCHAR", "rawCommand": "VARCHAR"
            }
        }') as j
    from lines as l
),

-- message.parts as a list of typed Parts (a bare string part becomes {"text": ...}). Each part
-- is parsed once, straight into its type: normalizing the list as JSON first and parsing that
-- back held a batch's tool output several times over and ran a worker out of memory.
normalized as (
    select
        *,
        list_transform(
            case
                when starts_with(j.message.parts, '[') then json_transform(j.message.parts, '["JSON"]')
                when starts_with(j.message.parts, '"') or starts_with(j.message.parts, '{') then [j.message.parts]
            end,
            lambda p: json_transform(
                case when starts_with(p, '"') then json_object('text', json_extract_string(p, '$')) else p end,
                '{
                    "text": "VARCHAR", "thought": "BOOLEAN",
                    "functionCall": {"id": "VARCHAR", "name": "VARCHAR", "args": "JSON"},
                    "functionResponse": {"id": "VARCHAR", "name": "VARCHAR", "response": "JSON"},
                    "inlineData": {"mimeType": "VARCHAR", "data": "VARCHAR"},
                    "fileData": {"mimeType": "VARCHAR", "fileUri": "VARCHAR"},
                    "executableCode": "JSON", "codeExecutionResult": "JSON"
                }')) as pl
    from parsed
),

typed as (
    select
        *,
        -- readable text: text parts that are neither reasoning nor the hook-context part
        nullif(array_to_string(list_filter(
            list_transform(pl, lambda x: case
                when coalesce(x.thought, false) then null
                when ltrim(x.text) like '<qwen:user-prompt-submit-context>%' then null
                else x.text end),
            lambda t: t is not null), chr(10)), '') as parts_text,
        coalesce(len(list_filter(pl, lambda x:
            ltrim(x.text) like '<qwen:user-prompt-submit-context>%')), 0) as n_hook_parts,
        coalesce(len(list_filter(pl, lambda x: x.functionResponse is not null)), 0) as n_responses,
        coalesce(len(list_filter(pl, lambda x: x.functionCall is not null)), 0) as n_calls,
        coalesce(len(list_filter(pl, lambda x: coalesce(x.thought, false))), 0) as n_thoughts,
        coalesce(len(pl), 0) as n_parts,
        case
            when j.type = 'user' then 'user'
            when j.type = 'assistant' then 'assistant'
            when j.type = 'tool_result' then 'user'
            when j.type = 'system' and j.subtype = 'chat_compression' then 'system'
            when j.type = 'system' and j.subtype = 'slash_command' then 'user'
            when j.type = 'system' and j.subtype is null and pl is not null then 'system'
        end as role
    from normalized
),

classified as (
    select
        *,
        case
            when j.type = 'user' and n_responses > 0 then 'tool_result'
            when j.type = 'user' then 'prompt'
            when j.type = 'tool_result' then 'tool_result'
            when j.type = 'assistant' and n_calls > 0 then 'tool_use'
            when j.type = 'assistant' and n_parts > 0 and n_thoughts = n_parts then 'thinking'
            when j.type = 'assistant' then 'response'
            when j.type = 'system' and j.subtype = 'chat_compression' then 'compact_boundary'
            when j.type = 'system' and j.subtype = 'slash_command' then 'prompt'
            when j.type = 'system' and j.subtype in (
                'custom_title', 'session_model', 'parent_session', 'session_source',
                'session_approval_mode', 'session_execution_engine') then 'metadata'
            when j.type = 'system' and j.subtype is not null
                then regexp_replace(lower(j.subtype), '[^a-z0-9]+', '_', 'g')
            when j.type = 'system' then 'system'
            else 'unknown'
        end as kind,
        case
            when j.type = 'user' then coalesce(nullif(j.systemPayload.displayText, ''), parts_text)
            when j.type = 'system' and j.subtype = 'slash_command' then j.systemPayload.rawCommand
            when j.type = 'system' and j.subtype = 'custom_title' then j.systemPayload.customTitle
            else parts_text
        end as text
    from typed
),

final as (
    select
        f.source,
        coalesce(f.session_hint, f.file_stem) as session_id,
        coalesce(f.parent_session_hint,
            case when c.j.subtype = 'parent_session' then c.j.systemPayload.parentSessionId end)
            as parent_session_id,
        c.file_id,
        f.file_epoch,
        f.source_file,
        c.line_no,
        c.byte_offset,
        f.run_id as ingest_run_id,
        coalesce(c.j.type, 'unknown') as record_type,
        c.j.subtype,
        c.j.uuid as message_id,
        c.j.parentUuid as parent_id,
        null::varchar as logical_parent_id,
        c.role,
        c.j.timestamp as timestamp_raw,
        timezone('UTC', try_cast(c.j.timestamp as timestamptz)) as "timestamp",
        coalesce(c.j.isSidechain, false) as is_sidechain,
        coalesce(c.j.type = 'user' and c.j.provenance in ('system', 'goal_runtime', 'goal_control'), false)
            as is_meta,
        false as is_compact_summary,
        c.j.agentId as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        coalesce(c.j.model,
            case when c.j.subtype = 'session_model' then c.j.systemPayload.modelId end) as model,
        c.j.cwd,
        c.j.gitBranch as git_branch,
        c.j.version,
        c.text,
        c.j.usageMetadata.promptTokenCount as input_tokens,
        c.j.usageMetadata.candidatesTokenCount as output_tokens,
        null::bigint as cache_creation_tokens,
        c.j.usageMetadata.cachedContentTokenCount as cache_read_tokens,
        -- the parsed parts, for qwen_code__blocks (a JSON object built here was parsed back there,
        -- and held a batch's tool output several times over); not stored
        case when c.pl is not null then {
            'parts': c.pl, 'callId': c.j.toolCallResult.callId, 'status': c.j.toolCallResult.status
        } end as content,
        c.line as raw,
        c.kind,
        case
            when c.role <> 'user' or c.role is null or c.kind <> 'prompt' then null
            when c.j.subtype = 'slash_command' and c.j.systemPayload.phase = 'result' then 'command_output'
            when c.j.subtype = 'slash_command' then 'slash_command'
            when c.j.subtype in ('notification', 'cron', 'background_task_completed') then c.j.subtype
            when c.j.provenance = 'system' then 'meta'
            when c.j.provenance in ('goal_runtime', 'goal_control') then c.j.provenance
            when c.text is null and c.n_hook_parts > 0 then 'hook_context'
            when ltrim(c.text) like '<system-reminder>%' then 'system_reminder'
        end as harness_kind
    from classified as c
    join batch_files as f on f.file_id = c.file_id
),

with_month as (
    select
        *,
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from final
)

select * from with_month
