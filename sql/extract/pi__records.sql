-- grain: one row per complete JSONL line of a pi session file (header and every entry kept,
--        abandoned branches included)
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
-- `content` is a JSON list of normalized blocks {type, text, call_id, name, input, output,
-- is_error, media_type, data_chars} read by pi__blocks. Lambdas use json_extract*, never the
-- -> operators.
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "type": "VARCHAR", "id": "VARCHAR", "parentId": "VARCHAR", "timestamp": "VARCHAR",
            "version": "VARCHAR", "cwd": "VARCHAR", "parentSession": "VARCHAR",
            "branchedFrom": "VARCHAR", "provider": "VARCHAR", "modelId": "VARCHAR",
            "thinkingLevel": "VARCHAR", "summary": "VARCHAR", "firstKeptEntryId": "VARCHAR",
            "fromId": "VARCHAR", "customType": "VARCHAR", "content": "JSON", "name": "VARCHAR",
            "message": {
                "role": "VARCHAR", "content": "JSON", "model": "VARCHAR", "provider": "VARCHAR",
                "responseId": "VARCHAR", "stopReason": "VARCHAR", "errorMessage": "VARCHAR",
                "timestamp": "JSON", "toolCallId": "VARCHAR", "toolName": "VARCHAR",
                "isError": "BOOLEAN", "command": "VARCHAR", "output": "VARCHAR",
                "exitCode": "BIGINT", "cancelled": "BOOLEAN", "customType": "VARCHAR",
                "summary": "VARCHAR",
                "usage": {"input": "BIGINT", "output": "BIGINT", "cacheRead": "BIGINT",
                          "cacheWrite": "BIGINT"}
            }
        }') as j
    from lines as l
),

-- the content a row carries, as a JSON array of parts (a bare string becomes one text part)
contents as (
    select
        *,
        case when j.type = 'message' then j.message.role end as mrole,
        coalesce(case when j.type = 'message' then j.message.content end,
                 case when j.type = 'custom_message' then j.content end) as raw_content
    from parsed
),

parts_of as (
    select
        *,
        case
            when json_type(raw_content) = 'ARRAY' then json_transform(raw_content, '[{
                "type": "VARCHAR", "text": "VARCHAR", "thinking": "VARCHAR", "id": "VARCHAR",
                "name": "VARCHAR", "arguments": "JSON", "data": "VARCHAR", "mimeType": "VARCHAR"
            }]')
            when json_type(raw_content) = 'VARCHAR' then json_transform(
                json_array(json_object('type', 'text', 'text', raw_content ->> '$')), '[{
                "type": "VARCHAR", "text": "VARCHAR", "thinking": "VARCHAR", "id": "VARCHAR",
                "name": "VARCHAR", "arguments": "JSON", "data": "VARCHAR", "mimeType": "VARCHAR"
            }]')
        end as pl
    from contents
),

facts as (
    select
        *,
        nullif(array_to_string(list_filter(
            list_transform(pl, lambda p: case when p.type = 'text' then p.text end),
            lambda t: t is not null), chr(10)), '') as parts_text,
        coalesce(len(list_filter(pl, lambda p: p.type = 'toolCall')), 0) as n_calls,
        coalesce(len(list_filter(pl, lambda p: p.type = 'thinking')), 0) as n_thinking,
        coalesce(len(pl), 0) as n_parts,
        -- message.timestamp: Unix ms (a number), or an ISO string in some old files
        case
            when json_type(j.message.timestamp) in ('UBIGINT', 'BIGINT', 'DOUBLE')
                then try_cast(j.message.timestamp ->> '$' as double)
        end as msg_epoch,
        case when json_type(j.message.timestamp) = 'VARCHAR' then j.message.timestamp ->> '$' end
            as msg_iso
    from parts_of
),

blocks as (
    select
        *,
        case
            when j.type = 'message' and mrole = 'toolResult' then list_concat(
                [json_object(
                    'type', 'tool_result', 'call_id', j.message.toolCallId,
                    'name', j.message.toolName, 'output', parts_text,
                    'is_error', coalesce(j.message.isError, false))],
                list_filter(list_transform(pl, lambda p: case when p.type = 'image' then json_object(
                    'type', 'image', 'media_type', p.mimeType, 'data_chars', strlen(p.data)) end),
                    lambda b: b is not null))
            when j.type = 'message' and mrole = 'bashExecution' then [json_object(
                'type', 'shell_command', 'text', j.message.command, 'output', j.message.output,
                'is_error', coalesce(j.message.exitCode <> 0, false) or coalesce(j.message.cancelled, false))]
            when j.type in ('compaction', 'branch_summary') and j.summary is not null
                then [json_object('type', 'text', 'text', j.summary)]
            when j.type = 'message' and j.message.summary is not null and pl is null
                then [json_object('type', 'text', 'text', j.message.summary)]
            when pl is not null then list_filter(list_transform(pl, lambda p, i: case p.type
                when 'text' then json_object('type', 'text', 'text', p.text)
                when 'thinking' then json_object('type', 'thinking', 'text', p.thinking)
                when 'toolCall' then json_object(
                    'type', 'tool_use',
                    'call_id', coalesce(p.id, coalesce(j.id, line_no::varchar) || ':' || i::varchar),
                    'name', p.name, 'input', p.arguments)
                when 'image' then json_object(
                    'type', 'image', 'media_type', p.mimeType, 'data_chars', strlen(p.data))
                else json_object('type', coalesce(p.type, 'unknown'), 'text', p.text)
                end), lambda b: b is not null)
        end as block_list
    from facts
),

typed as (
    select
        f.source,
        coalesce(f.session_hint, f.file_stem) as session_id,
        coalesce(
            f.parent_session_hint,
            case when b.j.type = 'session' then coalesce(
                regexp_extract(coalesce(b.j.parentSession, b.j.branchedFrom),
                    '_([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$', 1),
                regexp_extract(coalesce(b.j.parentSession, b.j.branchedFrom), '([^/\\]+?)(\.jsonl)?$', 1))
            end
        ) as parent_raw,
        b.file_id,
        f.file_epoch,
        f.source_file,
        b.line_no,
        b.byte_offset,
        f.run_id as ingest_run_id,
        coalesce(b.j.type, 'unknown') as record_type,
        case
            when b.j.type = 'message' then b.mrole
            when b.j.type in ('custom', 'custom_message') then b.j.customType
            when b.j.type = 'session' then 'v' || coalesce(b.j.version, '1')
        end as subtype,
        case when b.j.type <> 'session' then b.j.id end as message_id,
        b.j.parentId as parent_id,
        case when b.j.type = 'compaction' then b.j.firstKeptEntryId
             when b.j.type = 'branch_summary' then b.j.fromId end as logical_parent_id,
        case
            when b.j.type = 'message' and b.mrole = 'assistant' then 'assistant'
            when b.j.type = 'message' and b.mrole in ('user', 'toolResult', 'bashExecution', 'custom',
                                                      'hookMessage', 'branchSummary', 'compactionSummary')
                then 'user'
            when b.j.type = 'custom_message' then 'user'
            when b.j.type in ('compaction', 'branch_summary') then 'system'
        end as role,
        coalesce(b.j.timestamp, b.msg_iso, try_cast(b.msg_epoch as bigint)::varchar, b.msg_epoch::varchar) as timestamp_raw,
        coalesce(
            timezone('UTC', try_cast(b.j.timestamp as timestamptz)),
            timezone('UTC', try_cast(b.msg_iso as timestamptz)),
            case when b.msg_epoch is not null and abs(b.msg_epoch) < 100000000000
                then try(make_timestamp((b.msg_epoch * 1000000)::bigint)) end,
            case when b.msg_epoch is not null
                then try(make_timestamp((b.msg_epoch * 1000)::bigint)) end
        ) as "timestamp",
        b.j,
        b.mrole,
        b.parts_text,
        b.n_calls,
        b.n_thinking,
        b.n_parts,
        b.block_list,
        b.line
    from blocks as b
    join batch_files as f on f.file_id = b.file_id
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
            when record_type = 'custom_message' then 'prompt'
            when record_type = 'compaction' then 'compact_boundary'
            when record_type = 'branch_summary' then 'system'
            when record_type in ('session', 'model_change', 'session_info') then 'metadata'
            when record_type in ('thinking_level_change', 'custom', 'label', 'context_transform', 'ephemeral')
                then record_type
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
        parent_raw as parent_session_id,
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
        null::varchar as agent_id,
        null::varchar as request_id,
        case when mrole = 'assistant' then j.message.responseId end as api_message_id,
        case
            when mrole = 'assistant' then j.message.model
            when record_type = 'model_change' then j.modelId
            when record_type = 'session' then j.modelId
        end as model,
        case when record_type = 'session' then nullif(j.cwd, '') end as cwd,
        null::varchar as git_branch,
        case when record_type = 'session' then coalesce(j.version, '1') end as version,
        case
            when record_type = 'session_info' then nullif(trim(j.name), '')
            when record_type in ('compaction', 'branch_summary') then j.summary
            when mrole = 'bashExecution' then j.message.command
            when mrole in ('branchSummary', 'compactionSummary') then coalesce(parts_text, j.message.summary)
            when mrole = 'toolResult' then null
            when role is not null then parts_text
        end as text,
        case when mrole = 'assistant' then j.message.usage.input end as input_tokens,
        case when mrole = 'assistant' then j.message.usage.output end as output_tokens,
        case when mrole = 'assistant' then j.message.usage.cacheWrite end as cache_creation_tokens,
        case when mrole = 'assistant' then j.message.usage.cacheRead end as cache_read_tokens,
        case when block_list is not null and len(block_list) > 0 then to_json(block_list) end as content,
        line as raw,
        kind,
        harness_kind,
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from classified
)

select * from final
