-- grain: one row per line made of grok-cli's grok.db: a sessions, messages, tool_calls (with
--        its results), usage_events or compactions row (the line names its "table"); every
--        line kept
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "table": "VARCHAR", "id": "VARCHAR", "session_id": "VARCHAR", "seq": "BIGINT",
            "role": "VARCHAR", "message": {"role": "VARCHAR", "content": "JSON"}, "created_at": "VARCHAR",
            "title": "VARCHAR", "model": "VARCHAR", "mode": "VARCHAR", "cwd_at_start": "VARCHAR",
            "cwd_last": "VARCHAR", "status": "VARCHAR", "workspace": {"canonical_path": "VARCHAR"},
            "tool_call_id": "VARCHAR", "started_at": "VARCHAR", "source": "VARCHAR",
            "input_tokens": "BIGINT", "output_tokens": "BIGINT", "summary": "VARCHAR",
            "message_seq": "BIGINT"
        }') as j
    from lines as l
),

shaped as (
    select
        p.*,
        f.source,
        f.file_epoch,
        f.source_file,
        f.run_id,
        coalesce(j.message.role, j.role) as msg_role,
        case when json_type(j.message.content) = 'ARRAY' then json_transform(j.message.content, '[{
            "type": "VARCHAR", "text": "VARCHAR", "image": "VARCHAR", "data": "VARCHAR",
            "mediaType": "VARCHAR", "mimeType": "VARCHAR", "filename": "VARCHAR",
            "toolCallId": "VARCHAR", "toolName": "VARCHAR", "input": "JSON",
            "output": {"type": "VARCHAR", "value": "JSON"}
        }]') end as parts
    from parsed as p
    join batch_files as f on f.file_id = p.file_id
),

texts as (
    select
        *,
        case
            when json_type(j.message.content) = 'VARCHAR' then j.message.content ->> '$'
            else nullif(array_to_string(list_filter(list_transform(parts,
                lambda x: case when x.type = 'text' then x.text end), lambda t: t is not null), chr(10)), '')
        end as msg_text,
        list_transform(parts, lambda x: x.type) as part_types
    from shaped
),

typed as (
    select
        source,
        case when j."table" = 'sessions' then j.id else j.session_id end as session_id,
        null::varchar as parent_session_id,
        file_id,
        file_epoch,
        source_file,
        line_no,
        byte_offset,
        run_id as ingest_run_id,
        coalesce(j."table", 'unknown') as record_type,
        case j."table"
            when 'sessions' then j.mode
            when 'messages' then msg_role
            when 'tool_calls' then j.status
            when 'usage_events' then j.source
        end as subtype,
        case j."table"
            when 'sessions' then j.id
            when 'messages' then cast(j.seq as varchar)
            when 'tool_calls' then j.tool_call_id
            else j.id
        end as message_id,
        null::varchar as parent_id,
        null::varchar as logical_parent_id,
        case
            when j."table" = 'messages' then case msg_role
                when 'user' then 'user' when 'tool' then 'user'
                when 'assistant' then 'assistant' when 'system' then 'system' end
            when j."table" = 'compactions' then 'system'
        end as role,
        case when j."table" = 'tool_calls' then j.started_at else j.created_at end as timestamp_raw,
        false as is_sidechain,
        false as is_meta,
        coalesce(j."table" = 'compactions'
            or (j."table" = 'messages' and msg_role = 'system'
                and starts_with(msg_text, '[Context checkpoint summary]')), false) as is_compact_summary,
        null::varchar as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        -- auxiliary calls (titles, recaps) run on another model than the session's
        case
            when j."table" = 'sessions' then nullif(j.model, '')
            when j."table" = 'usage_events' and coalesce(j.source, '') not in ('title', 'recap', 'compaction')
                then nullif(j.model, '')
        end as model,
        case when j."table" = 'sessions' then coalesce(nullif(j.cwd_last, ''), nullif(j.cwd_at_start, ''),
                                                      j.workspace.canonical_path) end as cwd,
        null::varchar as git_branch,
        null::varchar as version,
        case
            when j."table" = 'sessions' then nullif(trim(j.title), '')
            when j."table" = 'messages' then msg_text
            when j."table" = 'compactions' then j.summary
        end as text,
        case when j."table" = 'usage_events' then j.input_tokens end as input_tokens,
        case when j."table" = 'usage_events' then j.output_tokens end as output_tokens,
        null::bigint as cache_creation_tokens,
        null::bigint as cache_read_tokens,
        -- one normalized block list (see normalized__blocks.sql)
        case
            when j."table" <> 'messages' then null
            when json_type(j.message.content) = 'VARCHAR' and nullif(msg_text, '') is not null
                then [json_object('type', 'text', 'text', msg_text)]
            else list_transform(parts, lambda x: case
                when x.type = 'text' then json_object('type', 'text', 'text', x.text)
                when x.type = 'reasoning' then json_object('type', 'thinking', 'text', x.text)
                when x.type in ('image', 'file') then json_object('type', x.type,
                    'media_type', coalesce(x.mediaType, x.mimeType,
                        nullif(regexp_extract(coalesce(x.image, x.data), '^data:([^;,]+)', 1), '')),
                    'data_chars', strlen(coalesce(x.image, x.data)), 'text', x.filename)
                when x.type = 'tool-call' then json_object('type', 'tool_use', 'call_id', x.toolCallId,
                    'tool_name', x.toolName, 'tool_input', x.input)
                when x.type = 'tool-result' then json_object('type', 'tool_result', 'call_id', x.toolCallId,
                    'tool_name', x.toolName,
                    'output_text', case
                        when json_type(x.output.value) = 'VARCHAR' then x.output.value ->> '$'
                        when json_type(x.output.value) = 'OBJECT' and (x.output.value ->> '$.output' is not null
                                                                    or x.output.value ->> '$.error' is not null)
                            then coalesce(x.output.value ->> '$.output', x.output.value ->> '$.error')
                        when json_type(x.output.value) = 'ARRAY' then array_to_string(list_filter(
                            list_transform(json_transform(x.output.value, '[{"type": "VARCHAR", "text": "VARCHAR"}]'),
                                lambda c: c.text), lambda t: t is not null), chr(10))
                        else x.output.value::varchar
                    end,
                    'is_error', coalesce(starts_with(x.output.type, 'error'), false)
                        or coalesce(try_cast(x.output.value ->> '$.success' as boolean) = false, false))
                else json_object('type', x.type)
            end)
        end as block_list,
        line as raw,
        part_types
    from texts
),

classified as (
    select
        * exclude (block_list, part_types),
        case when len(block_list) > 0 then block_list end as content,
        case
            when record_type = 'sessions' then 'metadata'
            when record_type = 'usage_events' then 'token_count'
            when record_type = 'tool_calls' then 'tool_status'
            when record_type = 'compactions' then 'compact_boundary'
            when record_type <> 'messages' then 'unknown'
            when subtype = 'tool' then 'tool_result'
            when role = 'user' then 'prompt'
            when role = 'system' then 'system'
            when role = 'assistant' and list_contains(part_types, 'tool-call') then 'tool_use'
            when role = 'assistant' and len(part_types) > 0
                and len(list_filter(part_types, lambda t: t <> 'reasoning')) = 0 then 'thinking'
            when role = 'assistant' then 'response'
            else 'unknown'
        end as kind,
        null::varchar as harness_kind,
        case
            when timestamp_raw is null then null
            when regexp_matches(timestamp_raw, '(Z|z|[+-]\d\d:?\d\d)$')
                then timezone('UTC', try_cast(timestamp_raw as timestamptz))
            else try_cast(timestamp_raw as timestamp)
        end as "timestamp"
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
