-- grain: one row per line made of a goose store: a sessions / messages / usage_ledger row of
--        sessions.db (the line names its "table"), or a line of a legacy <session>.jsonl
--        (line 1 = session metadata, then one message per line); every line kept
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "table": "VARCHAR",
            "id": "VARCHAR", "message_id": "VARCHAR", "session_id": "VARCHAR",
            "role": "VARCHAR",
            "content_json": "JSON", "content": "JSON",
            "created_timestamp": "BIGINT", "created": "BIGINT", "timestamp": "VARCHAR",
            "metadata_json": {"userVisible": "BOOLEAN", "agentVisible": "BOOLEAN"},
            "metadata": {"userVisible": "BOOLEAN", "agentVisible": "BOOLEAN"},
            "name": "VARCHAR", "description": "VARCHAR", "session_type": "VARCHAR",
            "working_dir": "VARCHAR", "created_at": "VARCHAR", "message_count": "BIGINT",
            "model_config_json": {"model_name": "VARCHAR"},
            "parent_session_id": "VARCHAR",
            "model": "VARCHAR",
            "input_tokens": "BIGINT", "output_tokens": "BIGINT",
            "cache_read_tokens": "BIGINT", "cache_write_tokens": "BIGINT"
        }') as j
    from lines as l
),

shaped as (
    select
        p.*,
        case
            when j."table" = 'sessions' then 'session'
            when j."table" = 'messages' then 'message'
            when j."table" = 'usage_ledger' then 'usage'
            when j."table" is not null then j."table"
            when j.role is not null then 'message'
            when j.working_dir is not null or j.message_count is not null
                or j.description is not null then 'session'
            else 'unknown'
        end as rtype,
        coalesce(j.content_json, j.content) as content,
        coalesce(j.metadata_json.userVisible, j.metadata.userVisible) as user_visible,
        coalesce(j.metadata_json.agentVisible, j.metadata.agentVisible) as agent_visible,
        coalesce(j.created_timestamp, j.created) as epoch
    from parsed as p
),

blocks_of as (
    select
        *,
        case when json_type(content) = 'ARRAY'
            then json_transform(content, '[{"type": "VARCHAR", "text": "VARCHAR"}]')
        end as bl,
        case when rtype = 'session' then j.created_at else j."timestamp" end as ts_text
    from shaped
),

typed as (
    select
        f.source,
        coalesce(
            f.session_hint,
            case when b.rtype = 'session' then b.j.id else b.j.session_id end,
            f.file_stem
        ) as session_id,
        coalesce(f.parent_session_hint, nullif(b.j.parent_session_id, '')) as parent_session_id,
        b.file_id,
        f.file_epoch,
        f.source_file,
        b.line_no,
        b.byte_offset,
        f.run_id as ingest_run_id,
        b.rtype as record_type,
        case when b.rtype = 'session' then nullif(b.j.session_type, '') end as subtype,
        case when b.rtype = 'message' then coalesce(b.j.message_id, b.j.id) end as message_id,
        null::varchar as parent_id,
        null::varchar as logical_parent_id,
        case when b.rtype = 'message' and b.j.role in ('user', 'assistant', 'system') then b.j.role end
            as role,
        coalesce(cast(b.epoch as varchar), b.ts_text) as timestamp_raw,
        case
            when abs(b.epoch) < 100000000000 then make_timestamp(b.epoch * 1000000)
            when abs(b.epoch) < 100000000000000 then make_timestamp(b.epoch * 1000)
            when b.epoch is not null then null
            when regexp_matches(b.ts_text, '(Z|[+-]\d\d:?\d\d)$')
                then timezone('UTC', try_cast(b.ts_text as timestamptz))
            else try_cast(b.ts_text as timestamp)
        end as "timestamp",
        false as is_sidechain,
        coalesce(b.rtype = 'message' and b.user_visible = false, false) as is_meta,
        coalesce(b.j.role = 'user' and b.user_visible = false and b.agent_visible, false)
            as is_compact_summary,
        null::varchar as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case
            when b.rtype = 'session' then nullif(b.j.model_config_json.model_name, '')
            when b.rtype = 'usage' then b.j.model
        end as model,
        case when b.rtype = 'session' then nullif(b.j.working_dir, '') end as cwd,
        null::varchar as git_branch,
        null::varchar as version,
        case
            when b.rtype = 'message' then nullif(array_to_string(
                list_filter(
                    list_transform(b.bl, lambda x: case when x.type = 'text' then x.text end),
                    lambda t: t is not null),
                chr(10)), '')
            -- a session record carries the session's title (the convention for metadata rows)
            when b.rtype = 'session' then coalesce(nullif(b.j.name, ''), nullif(b.j.description, ''))
        end as text,
        list_transform(b.bl, lambda x: x.type) as block_types,
        case when b.rtype = 'usage' then b.j.input_tokens end as input_tokens,
        case when b.rtype = 'usage' then b.j.output_tokens end as output_tokens,
        case when b.rtype = 'usage' then b.j.cache_write_tokens end as cache_creation_tokens,
        case when b.rtype = 'usage' then b.j.cache_read_tokens end as cache_read_tokens,
        case when b.rtype = 'message' then b.content end as content,
        b.line as raw,
        b.user_visible,
        b.agent_visible
    from blocks_of as b
    join batch_files as f on f.file_id = b.file_id
),

classified as (
    select
        *,
        case
            when record_type = 'session' then 'metadata'
            when record_type = 'usage' then 'token_count'
            when record_type <> 'message' or role is null then 'unknown'
            when len(block_types) > 0
                and len(list_filter(block_types, lambda t: t <> 'systemNotification')) = 0
                then 'system'
            when role = 'user' and list_contains(block_types, 'toolResponse') then 'tool_result'
            when role = 'user' then 'prompt'
            when role = 'assistant' and (list_contains(block_types, 'toolRequest')
                or list_contains(block_types, 'frontendToolRequest')) then 'tool_use'
            when role = 'assistant'
                and len(block_types) > 0
                and len(list_filter(block_types,
                    lambda t: t not in ('thinking', 'redactedThinking', 'reasoning'))) = 0
                then 'thinking'
            when role = 'assistant' then 'response'
            else 'unknown'
        end as kind,
        case
            when role <> 'user' or role is null then null
            when is_compact_summary then 'compact_summary'
            when user_visible = false then 'meta'
        end as harness_kind
    from typed
),

final as (
    select
        * exclude (block_types, user_visible, agent_visible),
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from classified
)

select * from final
