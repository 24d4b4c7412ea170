-- grain: one row per line of a Kimi CLI session file (every line kept): a wire log line, a
--        context line, a state / metadata / subagent meta document, or a `work_dir` line that
--        adapters/kimi_cli.py `to_lines` makes of kimi.json
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
-- output `content`: kosong content parts and tool blocks, as kimi_code__blocks.sql reads them
-- Lambdas here use json_extract/json_extract_string, never the -> operators.
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "type": "VARCHAR", "timestamp": "VARCHAR", "role": "VARCHAR", "content": "JSON",
            "tool_calls": "JSON", "tool_call_id": "VARCHAR", "name": "VARCHAR",
            "id": "VARCHAR", "token_count": "BIGINT",
            "message": {"type": "VARCHAR", "payload": "JSON", "role": "VARCHAR", "content": "JSON",
                        "tool_calls": "JSON", "tool_call_id": "VARCHAR"},
            "session_id": "VARCHAR", "work_dir": "VARCHAR",
            "custom_title": "VARCHAR", "title": "VARCHAR", "wire_mtime": "VARCHAR",
            "archived_at": "VARCHAR",
            "agent_id": "VARCHAR", "subagent_type": "VARCHAR", "description": "VARCHAR",
            "created_at": "VARCHAR", "updated_at": "VARCHAR",
            "launch_spec": {"work_dir": "VARCHAR", "effective_model": "VARCHAR"}
        }') as j
    from lines as l
),

-- which file a line comes from and what it is
shaped as (
    select
        p.*,
        f.file_stem,
        case
            when p.j.type = 'work_dir' then 'work_dir'
            when p.j.type = 'metadata' and p.j.role is null then 'wire'
            when p.j.message.type is not null then 'wire'
            when p.j.role is not null or p.j.message.role is not null then 'context'
            when f.file_stem in ('state', 'metadata', 'meta') then 'document'
            else 'unknown'
        end as origin
    from parsed as p
    join batch_files as f on f.file_id = p.file_id
),

wire as (
    select
        *,
        case when origin = 'wire' then coalesce(j.message.type, j.type) end as wire_type,
        case when origin = 'wire' then j.message.payload end as payload,
        -- a context line's message: top-level, or (a drift seen in a sample) wrapped in `message`
        case when origin = 'context' then coalesce(j.role, j.message.role) end as ctx_role,
        case when origin = 'context' then coalesce(j.content, j.message.content) end as ctx_content,
        case when origin = 'context' then coalesce(j.tool_calls, j.message.tool_calls) end as ctx_calls,
        case when origin = 'context' then coalesce(j.tool_call_id, j.message.tool_call_id) end as ctx_call_id
    from shaped
),

-- content parts: a string is one text part
parts as (
    select
        *,
        case
            when wire_type in ('TurnBegin', 'SteerInput') then payload -> '$.user_input'
            when origin = 'context' then ctx_content
        end as raw_parts
    from wire
),

normalized as (
    select
        *,
        case json_type(raw_parts)
            when 'ARRAY' then raw_parts
            when 'VARCHAR' then json_array(json_object('type', 'text', 'text', raw_parts ->> '$'))
        end as parts_json,
        -- tool calls of a context message, or a wire ToolCall: kosong {id, function{name, arguments}}
        case
            when wire_type = 'ToolCall' then json_array(payload)
            when json_type(ctx_calls) = 'ARRAY' then ctx_calls
        end as calls_json
    from parts
),

contents as (
    select
        *,
        case
            when wire_type = 'ContentPart' then json_array(payload)
            when wire_type = 'ToolResult' then json_array(json_object(
                'type', 'tool_result', 'tool_use_id', payload ->> '$.tool_call_id',
                'output', case
                    when nullif(payload ->> '$.return_value.output', '') is not null
                        or json_type(payload -> '$.return_value.output') = 'ARRAY'
                        then payload -> '$.return_value.output'
                    else payload -> '$.return_value.message'
                end,
                'is_error', coalesce(try_cast(payload ->> '$.return_value.is_error' as boolean), false)))
            when origin = 'context' and ctx_role = 'tool' then json_array(json_object(
                'type', 'tool_result', 'tool_use_id', ctx_call_id, 'output', parts_json,
                'is_error', coalesce(json_extract_string(parts_json, '$[0].text') like '<system>ERROR%', false)))
            when parts_json is not null or calls_json is not null then to_json(list_concat(
                coalesce(json_extract(parts_json, '$[*]'), []::json[]),
                coalesce(list_transform(json_extract(calls_json, '$[*]'), lambda c: json_object(
                    'type', 'tool_use',
                    'id', json_extract_string(c, '$.id'),
                    'name', json_extract_string(c, '$.function.name'),
                    'input', case
                        when json_valid(json_extract_string(c, '$.function.arguments'))
                            then json(json_extract_string(c, '$.function.arguments'))
                        else json_extract(c, '$.function.arguments')
                    end)), []::json[])))
        end as content
    from normalized
),

typed as (
    select
        *,
        json_transform(content, '[{"type": "VARCHAR", "text": "VARCHAR"}]') as bl,  -- null unless a list
        case
            when wire_type in ('TurnBegin', 'SteerInput', 'ToolResult') then 'user'
            when wire_type in ('ContentPart', 'ToolCall') then 'assistant'
            when ctx_role in ('user', 'assistant', 'system') then ctx_role
            when ctx_role = 'tool' then 'user'
        end as role,
        case
            when origin = 'work_dir' then 'work_dir'
            when origin = 'document' and file_stem = 'meta' then 'subagent_meta'
            when origin = 'document' then 'session_state'
            when origin = 'wire' then wire_type
            when origin = 'context' then ctx_role
            else coalesce(j.type, 'unknown')
        end as record_type
    from contents
),

classified as (
    select
        *,
        list_transform(bl, lambda x: x.type) as block_types,
        nullif(array_to_string(
            list_filter(list_transform(bl, lambda x: case when x.type = 'text' then x.text end),
                lambda t: t is not null), chr(10)), '') as block_text
    from typed
),

kinds as (
    select
        *,
        case
            when role = 'user' and list_contains(block_types, 'tool_result') then 'tool_result'
            when role = 'user' then 'prompt'
            when role = 'assistant' and list_contains(block_types, 'tool_use') then 'tool_use'
            when role = 'assistant' and len(block_types) > 0
                and len(list_filter(block_types, lambda t: t <> 'think')) = 0 then 'thinking'
            when role = 'assistant' then 'response'
            when role = 'system' then 'system'
            when origin = 'document' or (origin = 'wire' and wire_type = 'metadata') then 'metadata'
            when origin = 'work_dir' then 'work_dir'
            when ctx_role = '_system_prompt' then 'system_prompt'
            when ctx_role = '_checkpoint' then 'checkpoint'
            when ctx_role = '_usage' then 'context_usage'
            when wire_type = 'StatusUpdate' then case
                when json_type(payload -> '$.token_usage') = 'OBJECT' then 'token_count'
                else 'status_update' end
            when wire_type = 'CompactionEnd' then 'compact_boundary'
            when wire_type in ('TurnEnd', 'StepBegin', 'StepInterrupted', 'CompactionBegin', 'HookTriggered',
                               'HookResolved', 'MCPLoadingBegin', 'MCPLoadingEnd', 'Notification',
                               'PlanDisplay', 'ToolCallPart', 'SubagentEvent', 'ApprovalRequest',
                               'ApprovalResponse', 'ApprovalRequestResolved', 'ToolCallRequest',
                               'QuestionRequest')
                then lower(regexp_replace(regexp_replace(wire_type, '^MCP', 'Mcp'), '([a-z])([A-Z])', '\1_\2', 'g'))
            else 'unknown'
        end as kind
    from classified
),

final as (
    select
        f.source,
        coalesce(case when k.origin = 'work_dir' then k.j.session_id end, f.session_hint, f.file_stem)
            as session_id,
        coalesce(f.parent_session_hint,
            case when k.origin = 'work_dir' and k.j.session_id like '%/%'
                then split_part(k.j.session_id, '/', 1) end) as parent_session_id,
        k.file_id,
        f.file_epoch,
        f.source_file,
        k.line_no,
        k.byte_offset,
        f.run_id as ingest_run_id,
        k.record_type,
        case when k.origin = 'document' then k.j.subagent_type end as subtype,
        case
            when k.wire_type = 'StatusUpdate' then k.payload ->> '$.message_id'
            when k.wire_type = 'ToolCall' then k.payload ->> '$.id'
            when k.ctx_role = '_checkpoint' then k.j.id
        end as message_id,
        null::varchar as parent_id,
        null::varchar as logical_parent_id,
        k.role,
        case
            when k.origin = 'document' then coalesce(k.j.created_at, k.j.updated_at, k.j.wire_mtime)
            else k.j.timestamp
        end as timestamp_raw,
        k.kind,
        k.content,
        k.block_text,
        k.origin,
        k.wire_type,
        k.payload,
        k.line,
        k.j
    from kinds as k
    join batch_files as f on f.file_id = k.file_id
),

columns as (
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
        case
            when regexp_full_match(timestamp_raw, '[0-9]{12,}([.][0-9]+)?')
                then make_timestamp(try_cast(try_cast(timestamp_raw as double) * 1000 as bigint))
            when regexp_full_match(timestamp_raw, '[0-9]{1,11}([.][0-9]+)?')
                then timezone('UTC', to_timestamp(try_cast(timestamp_raw as double)))
            else timezone('UTC', try_cast(timestamp_raw as timestamptz))
        end as "timestamp",
        parent_session_id is not null as is_sidechain,
        false as is_meta,
        false as is_compact_summary,
        case when origin = 'document' then j.agent_id end as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case when origin = 'document' then j.launch_spec.effective_model end as model,
        case
            when origin = 'work_dir' then j.work_dir
            when origin = 'document' then j.launch_spec.work_dir
        end as cwd,
        null::varchar as git_branch,
        null::varchar as version,
        case
            when role is not null then block_text
            when origin = 'document' then coalesce(
                nullif(j.custom_title, ''), nullif(nullif(j.title, ''), 'Untitled'), nullif(j.description, ''))
        end as text,
        case when kind = 'token_count' then try_cast(payload ->> '$.token_usage.input_other' as bigint) end
            as input_tokens,
        case when kind = 'token_count' then try_cast(payload ->> '$.token_usage.output' as bigint) end
            as output_tokens,
        case when kind = 'token_count' then try_cast(payload ->> '$.token_usage.input_cache_creation' as bigint) end
            as cache_creation_tokens,
        case when kind = 'token_count' then try_cast(payload ->> '$.token_usage.input_cache_read' as bigint) end
            as cache_read_tokens,
        case when role is not null then content end as content,
        line as raw,
        kind,
        case
            when kind <> 'prompt' then null
            when ltrim(block_text) like '<system>CHECKPOINT%' then 'checkpoint'
            when ltrim(block_text) like '<system>%' then 'system_reminder'
            when ltrim(block_text) like '<system-reminder>%' then 'system_reminder'
            when wire_type = 'TurnBegin' and ltrim(block_text) like '/%' then 'slash_command'
        end as harness_kind
    from final
),

with_month as (
    select
        *,
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from columns
)

select * from with_month
