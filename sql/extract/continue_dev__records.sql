-- grain: one row per line made of a Continue store: the head of a session document
--        ("session"), one per history item ("history_item"), one per 2023 timeline node
--        ("timeline_node"), or one per entry of the sessions.json index ("session_index");
--        every line kept
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "type": "VARCHAR", "session_id": "VARCHAR", "sessionId": "VARCHAR", "index": "BIGINT",
            "title": "VARCHAR", "workspaceDirectory": "VARCHAR", "dateCreated": "JSON",
            "_items_have_usage": "BOOLEAN",
            "mode": "VARCHAR", "chatModelTitle": "VARCHAR", "status": "VARCHAR",
            "usage": {"promptTokens": "BIGINT", "completionTokens": "BIGINT",
                      "promptTokensDetails": {"cachedTokens": "BIGINT", "cacheWriteTokens": "BIGINT"}},
            "message": {
                "role": "VARCHAR", "id": "VARCHAR", "content": "JSON", "toolCalls": "JSON",
                "toolCallId": "VARCHAR",
                "usage": {"promptTokens": "BIGINT", "completionTokens": "BIGINT",
                          "promptTokensDetails": {"cachedTokens": "BIGINT", "cacheWriteTokens": "BIGINT"}}
            },
            "reasoning": {"text": "VARCHAR", "startAt": "JSON"},
            "conversationSummary": "VARCHAR", "toolCallStates": "JSON", "promptLogs": "JSON",
            "step": {"name": "VARCHAR", "description": "VARCHAR", "user_input": "VARCHAR", "hide": "BOOLEAN"}
        }') as j
    from lines as l
),

shaped as (
    select
        p.*,
        coalesce(j.type, 'unknown') as rtype,
        case
            when j.type = 'history_item' then j.message.role
            when j.type = 'timeline_node' and j.step.name = 'UserInputStep' then 'user'
            when j.type = 'timeline_node' and not coalesce(j.step.hide, false) then 'assistant'
        end as mrole,
        case
            when j.type = 'history_item' then j.reasoning.startAt
            when j.type in ('session', 'session_index') then j.dateCreated
        end as ts_json,
        case
            when j.workspaceDirectory like 'file://%'
                then url_decode(regexp_replace(j.workspaceDirectory, '^file://', ''))
            else nullif(j.workspaceDirectory, '')
        end as workspace,
        case when json_type(j.message.content) = 'ARRAY'
            then json_transform(j.message.content, '[{"type": "VARCHAR", "text": "VARCHAR"}]')
        end as parts,
        coalesce(json_array_length(case when json_type(j.message.toolCalls) = 'ARRAY' then j.message.toolCalls end), 0)
            + coalesce(len(list_filter(
                case when json_type(j.toolCallStates) = 'ARRAY'
                    then json_transform(j.toolCallStates, '[{"callInMessage": "BOOLEAN"}]') end,
                lambda s: not coalesce(s.callInMessage, false))), 0) as n_calls
    from parsed as p
),

timed as (
    select
        *,
        case when json_type(ts_json) = 'VARCHAR' then ts_json ->> '$' end as ts_text,
        coalesce(
            case when json_type(ts_json) in ('UBIGINT', 'BIGINT', 'DOUBLE') then try_cast(ts_json ->> '$' as double) end,
            case when json_type(ts_json) = 'VARCHAR' and regexp_matches(ts_json ->> '$', '^\d+(\.\d+)?$')
                then try_cast(ts_json ->> '$' as double) end
        ) as ts_num,
        -- whether any history item of the session counts its own tokens (then the session's
        -- totals are not counted again): to_lines tells it on the session line, which comes last
        coalesce(j._items_have_usage, false) as file_has_item_usage
    from shaped
),

typed as (
    select
        f.source,
        case
            when t.rtype in ('session', 'session_index') then coalesce(t.j.sessionId, f.session_hint, f.file_stem)
            else coalesce(t.j.session_id, f.session_hint, f.file_stem)
        end as session_id,
        f.parent_session_hint as parent_session_id,
        t.file_id,
        f.file_epoch,
        f.source_file,
        t.line_no,
        t.byte_offset,
        f.run_id as ingest_run_id,
        t.rtype as record_type,
        case
            when t.rtype = 'session' then t.j.mode
            when t.rtype = 'history_item' then t.mrole
            when t.rtype = 'timeline_node' then t.j.step.name
        end as subtype,
        case
            when t.rtype = 'history_item' then coalesce(t.j.message.id, t.j."index"::varchar)
            when t.rtype = 'timeline_node' then t.j."index"::varchar
        end as message_id,
        null::varchar as parent_id,
        null::varchar as logical_parent_id,
        case
            when t.mrole in ('user', 'tool') then 'user'
            when t.mrole in ('assistant', 'thinking') then 'assistant'
            when t.mrole = 'system' then 'system'
        end as role,
        coalesce(t.ts_text, t.ts_json::varchar) as timestamp_raw,
        case
            when abs(t.ts_num) < 100000000000 then make_timestamp((t.ts_num * 1000000)::bigint)
            when abs(t.ts_num) < 100000000000000 then make_timestamp((t.ts_num * 1000)::bigint)
            when t.ts_num is not null then null
            when regexp_matches(t.ts_text, '(Z|[+-]\d\d:?\d\d)$')
                then timezone('UTC', try_cast(t.ts_text as timestamptz))
            else try_cast(t.ts_text as timestamp)
        end as "timestamp",
        false as is_sidechain,
        false as is_meta,
        false as is_compact_summary,
        null::varchar as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case
            when t.rtype = 'session' then nullif(t.j.chatModelTitle, '')
            when t.rtype = 'history_item' and t.mrole = 'assistant'
                then nullif(json_extract_string(t.j.promptLogs, '$[0].modelTitle'), '')
        end as model,
        case when t.rtype in ('session', 'session_index') then t.workspace end as cwd,
        null::varchar as git_branch,
        null::varchar as version,
        case
            -- a metadata record carries the session's title (the convention for metadata rows)
            when t.rtype in ('session', 'session_index') then nullif(trim(t.j.title), '')
            when t.rtype = 'timeline_node' and t.mrole = 'user'
                then coalesce(t.j.step.user_input, t.j.step.description)
            when t.rtype = 'timeline_node' and t.mrole is not null then t.j.step.description
            when t.rtype <> 'history_item' or t.mrole in ('tool', 'thinking') then null
            when json_type(t.j.message.content) = 'VARCHAR' then nullif(t.j.message.content ->> '$', '')
            when t.parts is not null then nullif(array_to_string(
                list_filter(list_transform(t.parts, lambda x: case when x.type = 'text' then x.text end),
                    lambda s: s is not null),
                chr(10)), '')
        end as text,
        case
            when t.rtype = 'history_item' and t.mrole = 'assistant' then t.j.message.usage.promptTokens
            when t.rtype = 'session' and not t.file_has_item_usage then t.j.usage.promptTokens
        end as input_tokens,
        case
            when t.rtype = 'history_item' and t.mrole = 'assistant' then t.j.message.usage.completionTokens
            when t.rtype = 'session' and not t.file_has_item_usage then t.j.usage.completionTokens
        end as output_tokens,
        case
            when t.rtype = 'history_item' and t.mrole = 'assistant'
                then t.j.message.usage.promptTokensDetails.cacheWriteTokens
            when t.rtype = 'session' and not t.file_has_item_usage then t.j.usage.promptTokensDetails.cacheWriteTokens
        end as cache_creation_tokens,
        case
            when t.rtype = 'history_item' and t.mrole = 'assistant'
                then t.j.message.usage.promptTokensDetails.cachedTokens
            when t.rtype = 'session' and not t.file_has_item_usage then t.j.usage.promptTokensDetails.cachedTokens
        end as cache_read_tokens,
        case
            when t.rtype = 'history_item' then json_object(
                'role', t.mrole,
                'content', t.j.message.content,
                'toolCalls', t.j.message.toolCalls,
                'toolCallId', t.j.message.toolCallId,
                'status', t.j.status,
                'reasoning', t.j.reasoning.text,
                'toolCallStates', t.j.toolCallStates,
                'summary', t.j.conversationSummary)
        end as content,
        t.line as raw,
        t.n_calls
    from timed as t
    join batch_files as f on f.file_id = t.file_id
),

classified as (
    select
        *,
        case
            when record_type in ('session', 'session_index') then 'metadata'
            when record_type = 'timeline_node' and role = 'user' then 'prompt'
            when record_type = 'timeline_node' and role = 'assistant' then 'response'
            when record_type = 'timeline_node' then 'step'
            when record_type <> 'history_item' or role is null then 'unknown'
            when subtype = 'tool' then 'tool_result'
            when role = 'user' then 'prompt'
            when role = 'system' then 'system'
            when subtype = 'thinking' then 'thinking'
            when n_calls > 0 then 'tool_use'
            else 'response'
        end as kind,
        null::varchar as harness_kind
    from typed
),

final as (
    select
        * exclude (n_calls),
        strftime("timestamp", '%Y-%m') as month  -- null: the loader gives the file's earliest month
    from classified
)

select * from final
