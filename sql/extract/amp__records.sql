-- grain: one row per line that adapters/amp.py `to_lines` makes of an Amp thread document: the
--        thread header, each messages[] entry, each usageLedger event (every line kept)
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
            "type": "VARCHAR", "thread_id": "VARCHAR", "index": "BIGINT",
            "parent": "VARCHAR", "after": "VARCHAR", "count_tokens": "BOOLEAN",
            "thread": {
                "id": "VARCHAR", "v": "VARCHAR", "title": "VARCHAR", "created": "VARCHAR",
                "agentMode": "VARCHAR",
                "env": {"initial": {
                    "cwd": "VARCHAR", "tags": "JSON",
                    "trees": [{"uri": "VARCHAR", "repository": {"ref": "VARCHAR"}}],
                    "platform": {"client": "VARCHAR", "clientVersion": "VARCHAR"}
                }}
            },
            "message": {
                "role": "VARCHAR", "messageId": "VARCHAR", "content": "JSON",
                "meta": {"sentAt": "VARCHAR"},
                "state": {"type": "VARCHAR", "stopReason": "VARCHAR"},
                "usage": {
                    "model": "VARCHAR", "timestamp": "VARCHAR",
                    "inputTokens": "BIGINT", "outputTokens": "BIGINT",
                    "cacheCreationInputTokens": "BIGINT", "cacheReadInputTokens": "BIGINT"
                }
            },
            "event": {
                "id": "VARCHAR", "timestamp": "VARCHAR", "model": "VARCHAR",
                "operationType": "VARCHAR", "toMessageId": "VARCHAR",
                "tokens": {"input": "BIGINT", "output": "BIGINT"}
            }
        }') as j
    from lines as l
),

contents as (
    select
        *,
        case
            when j.type <> 'message' then null
            -- some readers report bare strings among the blocks: make them text blocks. A JSON
            -- value's type is read from its first character (DuckDB writes JSON minified): a
            -- full parse only to learn it held a batch's tool output several times over
            when starts_with(j.message.content, '[') then to_json(list_transform(
                json_transform(j.message.content, '["JSON"]'),
                lambda b: case when starts_with(b, '"')
                    then json_object('type', 'text', 'text', json_extract_string(b, '$')) else b end))
            when starts_with(j.message.content, '"')
                then json_array(json_object('type', 'text', 'text', j.message.content ->> '$'))
        end as content
    from parsed
),

facts as (
    select
        *,
        json_transform(content, '[{"type": "VARCHAR", "text": "VARCHAR"}]') as bl,   -- null unless a list
        -- the model tag Amp writes into env.initial.tags ("model:<id>")
        case when json_type(j.thread.env.initial.tags) = 'ARRAY' then list_filter(
            list_transform(json_transform(j.thread.env.initial.tags, '["VARCHAR"]'),
                lambda t: case when t like 'model:%' then substr(t, 7) end),
            lambda t: t is not null)[1]
        end as tag_model,
        j.thread.env.initial.trees[1] as tree
    from contents
),

typed as (
    select
        *,
        list_transform(bl, lambda x: x.type) as block_types,
        nullif(array_to_string(
            list_filter(list_transform(bl, lambda x: case when x.type = 'text' then x.text end),
                lambda t: t is not null), chr(10)), '') as block_text,
        case
            when j.type <> 'message' then null
            when j.message.role in ('user', 'assistant') then j.message.role
            when j.message.role in ('info', 'system') then 'system'
        end as role,
        case j.type
            when 'message' then coalesce(j.message.meta.sentAt, j.message.usage.timestamp, j.after)
            when 'thread' then j.thread.created
            when 'usage_event' then j.event.timestamp
        end as timestamp_raw
    from facts
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
            when role = 'system' and list_contains(block_types, 'summary') then 'compact_boundary'
            when role = 'system' then 'system'
            when j.type = 'thread' then 'metadata'
            when j.type = 'usage_event' then 'token_count'
            else 'unknown'
        end as kind,
        case
            when role = 'system' and block_text is null then nullif(array_to_string(list_filter(
                list_transform(json_extract(content, '$[*]'), lambda b:
                    json_extract_string(b, '$.summary.summary')),
                lambda t: t is not null), chr(10)), '')
            when role is not null then block_text
            when j.type = 'thread' then j.thread.title
        end as text
    from typed
),

final as (
    select
        f.source,
        coalesce(c.j.thread_id, f.session_hint, f.file_stem) as session_id,
        f.parent_session_hint as parent_session_id,
        c.file_id,
        f.file_epoch,
        f.source_file,
        c.line_no,
        c.byte_offset,
        f.run_id as ingest_run_id,
        case c.j.type
            when 'message' then coalesce(c.j.message.role, 'message')
            when 'thread' then 'thread'
            when 'usage_event' then 'usage_event'
            else 'unknown'
        end as record_type,
        case c.j.type
            when 'message' then c.j.message.state.type
            when 'usage_event' then c.j.event.operationType
            when 'thread' then c.j.thread.agentMode
        end as subtype,
        case c.j.type
            when 'message' then c.j.message.messageId
            when 'usage_event' then c.j.event.id
        end as message_id,
        case when c.j.type = 'message' then c.j.parent end as parent_id,
        null::varchar as logical_parent_id,
        c.role,
        c.timestamp_raw,
        case
            when regexp_full_match(c.timestamp_raw, '[0-9]{12,}')
                then make_timestamp(try_cast(c.timestamp_raw as bigint) * 1000)
            when regexp_full_match(c.timestamp_raw, '[0-9]{1,11}([.][0-9]+)?')
                then timezone('UTC', to_timestamp(try_cast(c.timestamp_raw as double)))
            else timezone('UTC', try_cast(c.timestamp_raw as timestamptz))
        end as "timestamp",
        false as is_sidechain,
        false as is_meta,
        c.kind = 'compact_boundary' as is_compact_summary,
        null::varchar as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case c.j.type
            when 'message' then c.j.message.usage.model
            when 'thread' then c.tag_model
            when 'usage_event' then c.j.event.model
        end as model,
        case when c.j.type = 'thread' then coalesce(
            c.j.thread.env.initial.cwd,
            case when c.tree.uri like 'file://%'
                then url_decode(regexp_replace(c.tree.uri, '^file://(localhost)?', ''))
            end)
        end as cwd,
        case when c.j.type = 'thread' then regexp_replace(c.tree.repository.ref, '^refs/heads/', '') end
            as git_branch,
        case when c.j.type = 'thread' then c.j.thread.env.initial.platform.clientVersion end as version,
        c.text,
        case
            when c.j.type = 'message' then c.j.message.usage.inputTokens
            when c.j.type = 'usage_event' and c.j.count_tokens then c.j.event.tokens.input
        end as input_tokens,
        case
            when c.j.type = 'message' then c.j.message.usage.outputTokens
            when c.j.type = 'usage_event' and c.j.count_tokens then c.j.event.tokens.output
        end as output_tokens,
        case when c.j.type = 'message' then c.j.message.usage.cacheCreationInputTokens end
            as cache_creation_tokens,
        case when c.j.type = 'message' then c.j.message.usage.cacheReadInputTokens end as cache_read_tokens,
        case when c.role is not null then c.content end as content,
        c.line as raw,
        c.kind,
        case
            when c.kind <> 'prompt' then null
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
