-- grain: one row per line made of an OpenCode store: a session, a message (with its parts
--        when they came from the database or an export), a part file or orphan part row, a
--        session_message row, or any other document; every line kept
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "table": "VARCHAR", "type": "VARCHAR",
            "id": "VARCHAR", "session_id": "VARCHAR", "message_id": "VARCHAR",
            "parent_id": "VARCHAR", "directory": "VARCHAR", "version": "VARCHAR", "title": "VARCHAR",
            "time_created": "BIGINT",
            "model": {"id": "VARCHAR"},
            "data": "JSON", "parts": "JSON"
        }') as j
    from lines as l
),

documents as (
    select
        p.*,
        coalesce(j."table", 'unknown') as rtype,
        json_transform(j.data, '{
            "id": "VARCHAR", "sessionID": "VARCHAR", "messageID": "VARCHAR",
            "role": "VARCHAR", "parentID": "VARCHAR", "type": "VARCHAR",
            "directory": "VARCHAR", "version": "VARCHAR", "text": "VARCHAR", "title": "VARCHAR",
            "time": {"created": "BIGINT", "start": "BIGINT"},
            "modelID": "VARCHAR", "model": {"modelID": "VARCHAR"}, "finish": "VARCHAR",
            "path": "JSON", "summary": "JSON", "error": {"name": "VARCHAR"},
            "tokens": {"input": "BIGINT", "output": "BIGINT", "reasoning": "BIGINT",
                       "cache": {"read": "BIGINT", "write": "BIGINT"}}
        }') as d,
        case when json_type(j.parts) = 'ARRAY' then json_transform(j.parts, '[{
            "data": {"type": "VARCHAR", "text": "VARCHAR", "synthetic": "BOOLEAN", "ignored": "BOOLEAN"}
        }]') end as pl
    from parsed as p
),

keyed as (
    select
        *,
        case
            when rtype = 'message' then coalesce(d.id, j.id)
            when rtype = 'part' then coalesce(j.message_id, d.messageID)
            when rtype = 'session_message' then j.id
        end as mid,
        case
            when rtype = 'message' then coalesce(d.time.created, j.time_created)
            when rtype = 'part' then coalesce(d.time.start, d.time.created, j.time_created)
            when rtype = 'session' then coalesce(j.time_created, d.time.created)
            else coalesce(j.time_created, d.time.created)
        end as epoch,
        list_transform(pl, lambda x: x.data.type) as part_types,
        list_filter(pl, lambda x: x.data.type = 'text' and not coalesce(x.data.ignored, false))
            as text_parts
    from documents
),

-- a part file that names neither its session (by path or document) nor lies in its
-- message's folder finds its session through that message, when it is in the same batch
message_sessions as (
    select k.mid, any_value(coalesce(f.session_hint, k.j.session_id, k.d.sessionID)) as session_id
    from keyed as k
    join batch_files as f on f.file_id = k.file_id
    where k.rtype = 'message' and k.mid is not null
    group by k.mid
),

typed as (
    select
        f.source,
        case
            when k.rtype = 'session' then coalesce(k.d.id, k.j.id, f.session_hint, f.file_stem)
            else coalesce(f.session_hint, k.j.session_id, k.d.sessionID, ms.session_id,
                          'unlinked:' || coalesce(k.mid, f.file_stem))
        end as session_id,
        coalesce(
            f.parent_session_hint,
            case when k.rtype = 'session' then nullif(coalesce(k.j.parent_id, k.d.parentID), '') end
        ) as parent_session_id,
        k.file_id,
        f.file_epoch,
        f.source_file,
        k.line_no,
        k.byte_offset,
        f.run_id as ingest_run_id,
        k.rtype as record_type,
        case
            when k.rtype = 'message' then k.d.error.name
            when k.rtype = 'part' then k.d.type
            when k.rtype = 'session_message' then k.j.type
        end as subtype,
        k.mid as message_id,
        case when k.rtype = 'message' then k.d.parentID end as parent_id,
        null::varchar as logical_parent_id,
        case when k.rtype = 'message' and k.d.role in ('user', 'assistant', 'system') then k.d.role end
            as role,
        cast(k.epoch as varchar) as timestamp_raw,
        case
            when abs(k.epoch) < 100000000000 then make_timestamp(k.epoch * 1000000)
            when abs(k.epoch) < 100000000000000 then make_timestamp(k.epoch * 1000)
        end as "timestamp",
        false as is_sidechain,
        false as is_meta,
        coalesce(k.rtype = 'message' and json_type(k.d.summary) = 'BOOLEAN'
            and k.d.summary::varchar = 'true', false) as is_compact_summary,
        null::varchar as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case
            when k.rtype = 'message' then coalesce(k.d.modelID, k.d.model.modelID)
            when k.rtype = 'session' then k.j.model.id
        end as model,
        case
            when k.rtype = 'session' then nullif(coalesce(k.j.directory, k.d.directory), '')
            when k.rtype = 'message' and json_type(k.d.path) = 'OBJECT' then k.d.path ->> '$.cwd'
            when k.rtype = 'message' and json_type(k.d.path) = 'VARCHAR' then k.d.path ->> '$'
        end as cwd,
        null::varchar as git_branch,
        case when k.rtype = 'session' then nullif(coalesce(k.j.version, k.d.version), '') end as version,
        case
            when k.rtype = 'part' and k.d.type = 'text' then k.d.text
            -- a session record carries the session's title (the convention for metadata rows):
            -- a database's row has it as a column, an exported or legacy document in its data
            when k.rtype = 'session' then nullif(coalesce(k.j.title, k.d.title), '')
            when k.rtype <> 'message' then null
            -- what the user typed: the text parts OpenCode did not add itself, else all of them
            when len(list_filter(k.text_parts, lambda x: not coalesce(x.data.synthetic, false))) > 0
                then array_to_string(list_transform(
                    list_filter(k.text_parts, lambda x: not coalesce(x.data.synthetic, false)),
                    lambda x: x.data.text), chr(10))
            else nullif(array_to_string(list_transform(k.text_parts, lambda x: x.data.text), chr(10)), '')
        end as text,
        k.part_types,
        -- a message of the file tree has no parts of its own: its finish reason tells a step
        -- that ended in tool calls
        k.pl is null and k.d.finish = 'tool-calls' as finished_in_tools,
        len(k.text_parts) > 0
            and len(list_filter(k.text_parts, lambda x: not coalesce(x.data.synthetic, false))) = 0
            as only_synthetic,
        case when k.rtype = 'message' then k.d.tokens.input end as input_tokens,
        case when k.rtype = 'message'
            then k.d.tokens.output + coalesce(k.d.tokens.reasoning, 0) end as output_tokens,
        case when k.rtype = 'message' then k.d.tokens.cache.write end as cache_creation_tokens,
        case when k.rtype = 'message' then k.d.tokens.cache.read end as cache_read_tokens,
        case
            when k.rtype = 'message' then k.j.parts
            when k.rtype = 'part' then json_array(json_object('id', coalesce(k.d.id, k.j.id), 'data', k.j.data))
        end as content,
        k.line as raw
    from keyed as k
    join batch_files as f on f.file_id = k.file_id
    left join message_sessions as ms on ms.mid = k.mid and k.rtype = 'part'
),

classified as (
    select
        *,
        case
            when record_type = 'session' then 'metadata'
            when record_type = 'part' then 'part'
            when record_type = 'session_message' then 'session_message'
            when record_type <> 'message' or role is null then 'unknown'
            when role = 'user' and list_contains(part_types, 'compaction') then 'compact_boundary'
            when role = 'user' then 'prompt'
            when role = 'system' then 'system'
            when list_contains(part_types, 'tool') or finished_in_tools then 'tool_use'
            when list_contains(part_types, 'reasoning') and not list_contains(part_types, 'text')
                then 'thinking'
            else 'response'
        end as kind,
        case
            when role <> 'user' or role is null then null
            when list_contains(part_types, 'compaction') then 'compaction'
            when only_synthetic then 'synthetic'
        end as harness_kind
    from typed
),

final as (
    select
        * exclude (part_types, only_synthetic, finished_in_tools),
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from classified
)

select * from final
