-- grain: one row per line made of a Crush crush.db: a sessions row or a messages row (the
--        line names its "table"); every line kept
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
-- `content` is a JSON list of normalized blocks {type, text, call_id, name, input, output,
-- is_error, media_type, data_chars} read by pi__blocks (the same block shape as pi). Lambdas use json_extract*, never
-- the -> operators.
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "table": "VARCHAR", "id": "VARCHAR", "session_id": "VARCHAR",
            "parent_session_id": "VARCHAR", "title": "VARCHAR",
            "prompt_tokens": "BIGINT", "completion_tokens": "BIGINT",
            "created_at": "JSON", "summary_message_id": "VARCHAR",
            "role": "VARCHAR", "parts": "JSON", "model": "VARCHAR", "provider": "VARCHAR",
            "is_summary_message": "BIGINT",
            "crush_schema_version": "VARCHAR", "project_dir": "VARCHAR", "workspace_cwd": "VARCHAR"
        }') as j
    from lines as l
),

parts_of as (
    select
        *,
        case when json_type(j.parts) = 'ARRAY' then json_transform(j.parts, '[{
            "type": "VARCHAR",
            "data": {
                "text": "VARCHAR", "thinking": "VARCHAR", "url": "VARCHAR",
                "Path": "VARCHAR", "MIMEType": "VARCHAR",
                "id": "VARCHAR", "name": "VARCHAR", "input": "JSON",
                "tool_call_id": "VARCHAR", "content": "VARCHAR", "data": "VARCHAR",
                "mime_type": "VARCHAR", "is_error": "BOOLEAN",
                "reason": "VARCHAR", "message": "VARCHAR",
                "command": "VARCHAR", "output": "VARCHAR", "exit_code": "BIGINT"
            }
        }]') end as pl,
        -- created_at: Unix seconds (milliseconds in some stores), rarely text
        case
            when json_type(j.created_at) in ('UBIGINT', 'BIGINT', 'DOUBLE') then try_cast(j.created_at ->> '$' as double)
            when json_type(j.created_at) = 'VARCHAR' then try_cast(j.created_at ->> '$' as double)
        end as epoch,
        case when json_type(j.created_at) = 'VARCHAR' then j.created_at ->> '$' end as created_text
    from parsed
),

facts as (
    select
        *,
        case
            when j."table" = 'sessions' then 'session'
            when j."table" = 'messages' then 'message'
            when j."table" is not null then j."table"
            else 'unknown'
        end as rtype,
        nullif(array_to_string(list_filter(
            list_transform(pl, lambda p: case when p.type = 'text' then p.data.text end),
            lambda t: t is not null), chr(10)), '') as parts_text,
        list_filter(list_transform(pl, lambda p: p.type), lambda t: t <> 'finish') as part_types,
        list_last(list_filter(list_transform(pl, lambda p: case when p.type = 'finish' then p.data.reason end),
            lambda r: r is not null)) as finish_reason,
        -- (a binary part's base64 `Data` is read by position: struct keys ignore case, and
        -- `data` is a tool_result's field)
        list_filter(list_transform(pl, lambda p, i: case p.type
            when 'text' then json_object('type', 'text', 'text', p.data.text)
            when 'reasoning' then json_object('type', 'thinking', 'text', p.data.thinking)
            when 'image_url' then json_object('type', 'image', 'text', p.data.url)
            when 'binary' then json_object(
                'type', case when p.data.MIMEType like 'image/%' then 'image' else 'file' end,
                'text', p.data.Path, 'media_type', p.data.MIMEType, 'data_chars', strlen(json_extract_string(j.parts, '$[' || (i - 1)::varchar || '].data.Data')))
            when 'tool_call' then json_object(
                'type', 'tool_use', 'call_id', p.data.id, 'name', p.data.name,
                -- input is the call's arguments as JSON text
                'input', case
                    when json_type(p.data.input) = 'VARCHAR' and json_valid(json_extract_string(p.data.input, '$'))
                        then json(json_extract_string(p.data.input, '$'))
                    else p.data.input end)
            when 'tool_result' then json_object(
                'type', 'tool_result', 'call_id', p.data.tool_call_id, 'name', p.data.name,
                'output', p.data.content, 'is_error', coalesce(p.data.is_error, false),
                'media_type', p.data.mime_type, 'data_chars', strlen(p.data.data))
            when 'shell_command' then json_object(
                'type', 'shell_command', 'text', p.data.command, 'output', p.data.output,
                'is_error', coalesce(p.data.exit_code <> 0, false))
            when 'finish' then null
            else json_object('type', coalesce(p.type, 'unknown'))
            end), lambda b: b is not null) as block_list
    from parts_of
),

typed as (
    select
        f.source,
        coalesce(case when b.rtype = 'session' then b.j.id else b.j.session_id end, f.session_hint, f.file_stem)
            as session_id,
        coalesce(f.parent_session_hint,
            case when b.rtype = 'session' then nullif(b.j.parent_session_id, '') end) as parent_session_id,
        b.file_id,
        f.file_epoch,
        f.source_file,
        b.line_no,
        b.byte_offset,
        f.run_id as ingest_run_id,
        b.rtype as record_type,
        case when b.rtype = 'message' then b.finish_reason end as subtype,
        case when b.rtype = 'message' then b.j.id end as message_id,
        null::varchar as parent_id,
        null::varchar as logical_parent_id,
        case
            when b.rtype <> 'message' then null
            when b.j.role in ('user', 'tool') then 'user'
            when b.j.role in ('assistant', 'system') then b.j.role
        end as role,
        coalesce(b.created_text, try_cast(b.epoch as bigint)::varchar, b.epoch::varchar) as timestamp_raw,
        case
            when b.epoch is null then timezone('UTC', try_cast(b.created_text as timestamptz))
            when abs(b.epoch) < 100000000000 then try(make_timestamp((b.epoch * 1000000)::bigint))
            when abs(b.epoch) < 100000000000000 then try(make_timestamp((b.epoch * 1000)::bigint))
        end as "timestamp",
        b.j,
        b.parts_text,
        b.part_types,
        b.block_list,
        b.line
    from facts as b
    join batch_files as f on f.file_id = b.file_id
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
        coalesce(record_type = 'message' and j.is_summary_message = 1, false) as is_compact_summary,
        null::varchar as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case when record_type = 'message' then nullif(j.model, '') end as model,
        case when record_type = 'session' then coalesce(nullif(j.workspace_cwd, ''), j.project_dir) end as cwd,
        null::varchar as git_branch,
        case when record_type = 'session' then j.crush_schema_version end as version,
        case
            when record_type = 'session' then nullif(trim(j.title), '')
            when role is not null and j.role <> 'tool' then coalesce(parts_text,
                case when list_contains(part_types, 'shell_command') then
                    list_extract(json_extract_string(j.parts, '$[*].data.command'), 1) end)
        end as text,
        case when record_type = 'session' then j.prompt_tokens end as input_tokens,
        case when record_type = 'session' then j.completion_tokens end as output_tokens,
        null::bigint as cache_creation_tokens,
        null::bigint as cache_read_tokens,
        case when block_list is not null and len(block_list) > 0 then to_json(block_list) end as content,
        line as raw,
        case
            when record_type = 'session' then 'metadata'
            when record_type <> 'message' or role is null then 'unknown'
            when j.role = 'tool' or list_contains(part_types, 'tool_result') then 'tool_result'
            when role = 'user' then 'prompt'
            when role = 'system' then 'system'
            when list_contains(part_types, 'tool_call') then 'tool_use'
            when len(part_types) > 0 and len(list_filter(part_types, lambda t: t <> 'reasoning')) = 0
                then 'thinking'
            else 'response'
        end as kind,
        case
            when role <> 'user' or role is null or j.role = 'tool' then null
            when j.is_summary_message = 1 then 'compact_summary'
            when len(part_types) > 0 and len(list_filter(part_types, lambda t: t <> 'shell_command')) = 0
                then 'shell_escape'
        end as harness_kind,
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from typed
)

select * from final
