-- grain: one row per line of a Factory droid session file (every line kept): the session
--        JSONL, its .settings.json (one record), or a `droid exec` stream-json file
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
            "type": "VARCHAR", "subtype": "VARCHAR", "id": "VARCHAR", "parentId": "VARCHAR",
            "timestamp": "VARCHAR", "title": "VARCHAR", "sessionTitle": "VARCHAR",
            "owner": "VARCHAR", "version": "VARCHAR", "cwd": "VARCHAR", "model": "VARCHAR",
            "message": {"role": "VARCHAR", "content": "JSON"},
            "role": "VARCHAR", "text": "VARCHAR", "finalText": "VARCHAR",
            "toolCallId": "VARCHAR", "toolName": "VARCHAR", "parameters": "JSON",
            "value": "JSON", "isError": "BOOLEAN", "messageId": "VARCHAR",
            "summaryText": "VARCHAR",
            "usage": {
                "input_tokens": "BIGINT", "output_tokens": "BIGINT",
                "cache_creation_input_tokens": "BIGINT", "cache_read_input_tokens": "BIGINT"
            },
            "tokenUsage": {
                "inputTokens": "BIGINT", "outputTokens": "BIGINT",
                "cacheCreationTokens": "BIGINT", "cacheReadTokens": "BIGINT"
            }
        }') as j
    from lines as l
),

shaped as (
    select
        p.*,
        f.file_stem like '%.settings' as is_settings,
        case
            when p.j.type is not null then p.j.type
            when f.file_stem like '%.settings' then 'settings'
            else 'unknown'
        end as record_type
    from parsed as p
    join batch_files as f on f.file_id = p.file_id
),

-- every message-like record as a Claude-style list of content blocks
contents as (
    select
        *,
        case
            when record_type = 'message' and json_type(j.message.content) = 'ARRAY' then j.message.content
            when record_type = 'message' and json_type(j.message.content) = 'VARCHAR'
                then json_array(json_object('type', 'text', 'text', j.message.content ->> '$'))
            when record_type = 'message' and j.message.role is null and j.text is not null
                then json_array(json_object('type', 'text', 'text', j.text))
            when record_type = 'completion' and j.finalText is not null
                then json_array(json_object('type', 'text', 'text', j.finalText))
            when record_type = 'tool_call' then json_array(json_object(
                'type', 'tool_use', 'id', coalesce(j.toolCallId, j.id),
                'name', j.toolName, 'input', j.parameters))
            when record_type = 'tool_result' then json_array(json_object(
                'type', 'tool_result', 'tool_use_id', coalesce(j.toolCallId, j.id),
                'content', case
                    when json_type(j.value) = 'VARCHAR' then j.value ->> '$'
                    when json_type(j.value -> '$.stdout') = 'VARCHAR'
                        then concat_ws(chr(10), j.value ->> '$.stdout', nullif(j.value ->> '$.stderr', ''))
                    else j.value::varchar
                end,
                'is_error', coalesce(j.isError, false)
                    or coalesce(try_cast(j.value ->> '$.exitCode' as bigint), 0) <> 0))
        end as content
    from shaped
),

blocks_of as (
    select
        *,
        -- parsed once into the block list claude_code__blocks reads
        case when json_type(content) = 'ARRAY'
            then json_transform(content, '[{
                "type": "VARCHAR", "text": "VARCHAR", "thinking": "VARCHAR",
                "id": "VARCHAR", "name": "VARCHAR", "input": "JSON",
                "tool_use_id": "VARCHAR", "content": "VARCHAR", "is_error": "BOOLEAN",
                "source": {"media_type": "VARCHAR", "data": "VARCHAR"}
            }]')
        end as bl
    from contents
),

typed as (
    select
        *,
        list_transform(bl, lambda x: x.type) as block_types,
        -- text parts with droid's injected <system-reminder> blocks cut out
        nullif(regexp_replace(regexp_replace(array_to_string(
            list_filter(list_transform(bl, lambda x: case when x.type = 'text' then x.text end),
                lambda t: t is not null), chr(10)),
            '<system-reminder>.*?</system-reminder>', '', 'gs'), '^\s+|\s+$', '', 'g'), '') as clean_text,
        nullif(array_to_string(
            list_filter(list_transform(bl, lambda x: case when x.type = 'text' then x.text end),
                lambda t: t is not null), chr(10)), '') as full_text,
        case
            when record_type = 'message' then coalesce(j.message.role, j.role)
            when record_type = 'tool_call' then 'assistant'
            when record_type = 'tool_result' then 'user'
            when record_type = 'completion' then 'assistant'
            when record_type in ('error', 'compaction_state') then 'system'
        end as role
    from blocks_of
),

classified as (
    select
        *,
        case
            when role = 'user' and list_contains(block_types, 'tool_result') then 'tool_result'
            when role = 'user' then 'prompt'
            when role = 'assistant' and list_contains(block_types, 'tool_use') then 'tool_use'
            when role = 'assistant' and len(block_types) > 0
                and len(list_filter(block_types, lambda t: t not in ('thinking', 'redacted_thinking'))) = 0
                then 'thinking'
            when role = 'assistant' then 'response'
            when record_type = 'compaction_state' then 'compact_boundary'
            when role = 'system' then 'system'
            when record_type in ('session_start', 'system') then 'metadata'
            when record_type in ('settings', 'todo_state') then record_type
            else 'unknown'
        end as kind,
        case
            when role = 'user' then coalesce(clean_text, full_text)
            when role = 'assistant' then full_text
            when record_type = 'compaction_state' then j.summaryText
            when record_type = 'error' then json_extract_string(line, '$.message')
            when record_type = 'session_start' then coalesce(j.sessionTitle, j.title)
        end as text,
        case
            when role = 'user' and not list_contains(block_types, 'tool_result')
                and clean_text is null and full_text like '%<system-reminder>%' then 'system_reminder'
            when role = 'user' and not list_contains(block_types, 'tool_result')
                and ltrim(coalesce(clean_text, full_text)) like '<command-name>%' then 'slash_command'
            when role = 'user' and not list_contains(block_types, 'tool_result')
                and ltrim(coalesce(clean_text, full_text)) like '<local-command-stdout>%' then 'command_output'
        end as harness_kind
    from typed
),

final as (
    select
        f.source,
        coalesce(f.session_hint, f.file_stem) as session_id,
        f.parent_session_hint as parent_session_id,
        c.file_id,
        f.file_epoch,
        f.source_file,
        c.line_no,
        c.byte_offset,
        f.run_id as ingest_run_id,
        c.record_type,
        c.j.subtype,
        case when c.record_type not in ('settings', 'session_start') then c.j.id end as message_id,
        c.j.parentId as parent_id,
        null::varchar as logical_parent_id,
        c.role,
        c.j.timestamp as timestamp_raw,
        case
            when regexp_full_match(c.j.timestamp, '[0-9]{12,}')
                then make_timestamp(try_cast(c.j.timestamp as bigint) * 1000)
            when regexp_full_match(c.j.timestamp, '[0-9]{1,11}([.][0-9]+)?')
                then timezone('UTC', to_timestamp(try_cast(c.j.timestamp as double)))
            else timezone('UTC', try_cast(c.j.timestamp as timestamptz))
        end as "timestamp",
        false as is_sidechain,
        false as is_meta,
        c.record_type = 'compaction_state' as is_compact_summary,
        null::varchar as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case when c.record_type in ('settings', 'system') then c.j.model end as model,
        case when c.record_type in ('session_start', 'system') then c.j.cwd end as cwd,
        null::varchar as git_branch,
        case when c.record_type = 'session_start' then c.j.version end as version,
        c.text,
        coalesce(c.j.tokenUsage.inputTokens, c.j.usage.input_tokens) as input_tokens,
        coalesce(c.j.tokenUsage.outputTokens, c.j.usage.output_tokens) as output_tokens,
        coalesce(c.j.tokenUsage.cacheCreationTokens, c.j.usage.cache_creation_input_tokens)
            as cache_creation_tokens,
        coalesce(c.j.tokenUsage.cacheReadTokens, c.j.usage.cache_read_input_tokens) as cache_read_tokens,
        case when c.role is not null then c.bl end as content,   -- parsed blocks; not stored
        c.line as raw,
        c.kind,
        case when c.kind = 'prompt' then c.harness_kind end as harness_kind
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
