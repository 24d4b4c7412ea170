-- grain: one row per line of a Kimi Code agent wire log (every line kept), or one row per
--        session state.json
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
-- Lambdas here use json_extract/json_extract_string, never the -> operators.
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "type": "VARCHAR", "time": "VARCHAR", "created_at": "VARCHAR", "agentId": "VARCHAR",
            "model": "VARCHAR", "modelAlias": "VARCHAR", "cwd": "VARCHAR",
            "environmentDisclosure": {"cwd": "VARCHAR"},
            "origin": {"kind": "VARCHAR", "name": "VARCHAR", "variant": "VARCHAR"},
            "message": {
                "role": "VARCHAR", "content": "JSON",
                "origin": {"kind": "VARCHAR", "name": "VARCHAR", "variant": "VARCHAR"}
            },
            "event": {
                "type": "VARCHAR", "uuid": "VARCHAR", "turnId": "VARCHAR", "stepUuid": "VARCHAR",
                "parentUuid": "VARCHAR", "part": "JSON", "toolCallId": "VARCHAR", "name": "VARCHAR",
                "args": "JSON", "result": "JSON"
            },
            "usage": {
                "inputOther": "BIGINT", "output": "BIGINT",
                "inputCacheRead": "BIGINT", "inputCacheCreation": "BIGINT"
            },
            "usageScope": "VARCHAR", "summary": "VARCHAR", "contextSummary": "VARCHAR",
            "title": "VARCHAR", "customTitle": "VARCHAR", "workDir": "VARCHAR",
            "createdAt": "VARCHAR", "updatedAt": "VARCHAR",
            "agents": {"main": {"homedir": "VARCHAR"}}
        }') as j
    from lines as l
),

shaped as (
    select
        p.*,
        case
            when p.j.type is not null then p.j.type
            when f.file_stem = 'state' or f.file_stem like '%.state' then 'state'
            else 'unknown'
        end as record_type,
        p.j.event.type as event_type
    from parsed as p
    join batch_files as f on f.file_id = p.file_id
),

-- every message-like record as a list of content blocks the blocks SQL explodes
contents as (
    select
        *,
        case
            when record_type = 'context.append_message' and json_type(j.message.content) = 'ARRAY'
                then j.message.content
            when record_type = 'context.append_message' and json_type(j.message.content) = 'VARCHAR'
                then json_array(json_object('type', 'text', 'text', j.message.content ->> '$'))
            when event_type = 'content.part' and json_type(j.event.part) = 'OBJECT' then json_array(j.event.part)
            when event_type = 'tool.call' then json_array(json_object(
                'type', 'tool_use', 'id', j.event.toolCallId, 'name', j.event.name, 'input', j.event.args))
            when event_type = 'tool.result' then json_array(json_object(
                'type', 'tool_result', 'tool_use_id', j.event.toolCallId,
                'output', j.event.result -> '$.output',
                'is_error', coalesce(try_cast(j.event.result ->> '$.isError' as boolean), false)))
            when record_type = 'context.apply_compaction'
                then json_array(json_object('type', 'text', 'text', coalesce(j.summary, j.contextSummary)))
        end as content
    from shaped
),

typed as (
    select
        *,
        case when json_type(content) = 'ARRAY'
            then json_transform(content, '[{"type": "VARCHAR", "text": "VARCHAR"}]')
        end as bl,
        case
            when record_type = 'context.append_message' then j.message.role
            when event_type in ('content.part', 'tool.call') then 'assistant'
            when event_type = 'tool.result' then 'user'
            when record_type = 'context.apply_compaction' then 'system'
        end as role0
    from contents
),

classified as (
    select
        *,
        case when role0 in ('user', 'assistant', 'system') then role0
             when role0 = 'tool' then 'user' end as role,
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
                and len(list_filter(block_types, lambda t: t not in ('think', 'thinking'))) = 0 then 'thinking'
            when role = 'assistant' then 'response'
            when record_type = 'context.apply_compaction' then 'compact_boundary'
            when role = 'system' then 'system'
            when record_type in ('metadata', 'state') then 'metadata'
            when record_type = 'usage.record' then 'token_count'
            when record_type = 'context.append_loop_event' and event_type in ('step.begin', 'step.end')
                then replace(event_type, '.', '_')
            when record_type in (
                'config.update', 'profile.bind', 'tools.set_active_tools', 'llm.tools_snapshot',
                'llm.request', 'turn.prompt', 'turn.steer', 'turn.cancel', 'turn.ended',
                'permission.set_mode', 'permission.record_approval_result', 'plugin.session_start',
                'runtime.set_binding', 'token_counting.measured', 'token_counting.turn_recorded',
                'plan_mode.enter', 'plan_mode.exit', 'full_compaction.begin', 'full_compaction.complete')
                then regexp_replace(record_type, '[^a-z0-9]+', '_', 'g')
            else 'unknown'
        end as kind,
        coalesce(j.message.origin.kind, j.origin.kind) as origin_kind,
        coalesce(j.message.origin.name, j.origin.name) as origin_name
    from classified
),

final as (
    select
        f.source,
        coalesce(
            f.session_hint,
            case when k.record_type = 'state'
                then nullif(regexp_extract(k.j.agents.main.homedir, 'session_([0-9A-Za-z-]+)', 1), '') end,
            f.file_stem) as session_id,
        f.parent_session_hint as parent_session_id,
        k.file_id,
        f.file_epoch,
        f.source_file,
        k.line_no,
        k.byte_offset,
        f.run_id as ingest_run_id,
        k.record_type,
        k.event_type as subtype,
        k.j.event.uuid as message_id,
        coalesce(k.j.event.stepUuid, k.j.event.parentUuid) as parent_id,
        null::varchar as logical_parent_id,
        k.role,
        coalesce(k.j.time, k.j.created_at, case when k.record_type = 'state' then coalesce(k.j.updatedAt, k.j.createdAt) end)
            as timestamp_raw,
        k.j.agentId as agent_id_raw,
        k.kind,
        k.origin_kind,
        k.origin_name,
        k.content,
        k.block_text,
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
        kind = 'compact_boundary' as is_compact_summary,
        agent_id_raw as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case
            when record_type in ('config.update', 'profile.bind', 'llm.request') then coalesce(j.modelAlias, j.model)
            when record_type = 'usage.record' then j.model
        end as model,
        case
            when record_type = 'config.update' then j.cwd
            when record_type = 'profile.bind' then j.environmentDisclosure.cwd
            when record_type = 'state' then j.workDir
        end as cwd,
        null::varchar as git_branch,
        null::varchar as version,
        case
            when role is not null then block_text
            when record_type = 'state' then coalesce(nullif(j.customTitle, ''), j.title)
        end as text,
        case when record_type = 'usage.record' then j.usage.inputOther end as input_tokens,
        case when record_type = 'usage.record' then j.usage.output end as output_tokens,
        case when record_type = 'usage.record' then j.usage.inputCacheCreation end as cache_creation_tokens,
        case when record_type = 'usage.record' then j.usage.inputCacheRead end as cache_read_tokens,
        case when role is not null then content end as content,
        line as raw,
        kind,
        case
            when kind <> 'prompt' then null
            when origin_kind = 'injection' and ltrim(block_text) like '<system-reminder>%' then 'system_reminder'
            when origin_kind = 'injection' then 'injection'
            when origin_kind = 'system_trigger' and origin_name = 'subagent' then null
            when origin_kind is not null and origin_kind <> 'user' then origin_kind
            when ltrim(block_text) like '<system-reminder>%' then 'system_reminder'
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
