-- grain: one row per line made of a Cline, Roo Code or Kilo Code store (every line kept):
--        an API message, a UI message, a task-metadata entry, a HistoryItem, a Cline SDK
--        manifest, transcript header or message, or an OpenCode-schema row of kilo.db
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
--
-- Lines come from adapters/_cline_tasks.py (`rec` names the kind, `item` is the original
-- element) or, for kilo.db, from adapters/opencode.py's database reader (`table` names the
-- row; a message row carries its parts). Rules that are not obvious from the code:
-- * Messages are the API history (`api_message`), SDK messages and kilo.db messages; UI
--   messages are bookkeeping rows (role null) so nothing is counted twice. A `tool` role
--   (AI SDK tool results) is a user message of kind tool_result, a standalone reasoning item
--   an assistant message of kind thinking.
-- * Tokens: the extension's API history has no usage that is complete in every version, so
--   its tokens come from the UI's `api_req_started` rows (one per API request; also
--   `api_req_finished` of the first builds, and `deleted_api_reqs`/`subagent_usage` which
--   carry the sums of requests Cline removed or ran in subagents). SDK messages carry
--   `metrics`, whose inputTokens include the cached part: input_tokens = inputTokens minus
--   cacheReadTokens. kilo.db messages carry OpenCode's `tokens` (reasoning counted as output).
-- * A user message's `text` leaves out its `<environment_details>` blocks (context the
--   extension appends to every user turn; the cwd, and Roo's model, are read from them) and
--   unwraps the `<task>`/`<user_message>` tags around what the person typed.
-- * Metadata rows carry the session's title in `text`: Cline's UI `say: "task"` entry, a
--   HistoryItem's title or task, the SDK manifest's metadata.title, a kilo.db session's title.
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        -- `item` (an extension's element) is typed here, in the line's one parse: taken out as
        -- JSON and parsed again, each message was held twice more, and a batch of long tool
        -- output ran a worker out of memory. A kilo.db row's `data` and parts are taken out
        -- here too, as JSON: each part's data is handed on with its id (below).
        json_transform(l.line, '{
            "rec": "VARCHAR", "table": "VARCHAR", "section": "VARCHAR", "format": "VARCHAR",
            "session_id": "VARCHAR", "xml_blocks": "JSON",
            "id": "VARCHAR", "type": "VARCHAR", "parent_id": "VARCHAR", "directory": "VARCHAR",
            "title": "VARCHAR", "version": "VARCHAR", "time_created": "BIGINT",
            "model": "JSON", "data": "JSON", "parts": [{"id": "VARCHAR", "data": "JSON"}],
            "item": {
                "id": "VARCHAR", "role": "VARCHAR", "type": "VARCHAR", "say": "VARCHAR", "ask": "VARCHAR",
                "text": "VARCHAR", "ts": "BIGINT", "content": "JSON",
                "modelInfo": {"modelId": "VARCHAR", "id": "VARCHAR"},
                "metrics": {"inputTokens": "BIGINT", "outputTokens": "BIGINT",
                            "cacheReadTokens": "BIGINT", "cacheWriteTokens": "BIGINT"},
                "metadata": {"kind": "VARCHAR", "title": "VARCHAR"},
                "isSummary": "BOOLEAN",
                "task": "VARCHAR", "title": "VARCHAR", "parentTaskId": "VARCHAR", "workspace": "VARCHAR",
                "cwdOnTaskInitialization": "VARCHAR", "modelId": "VARCHAR",
                "model_id": "VARCHAR", "cline_version": "VARCHAR", "version": "VARCHAR", "path": "JSON",
                "cline_read_date": "BIGINT", "cline_edit_date": "BIGINT", "user_edit_date": "BIGINT",
                "roo_read_date": "BIGINT", "roo_edit_date": "BIGINT",
                "session_id": "VARCHAR", "parent_session_id": "VARCHAR", "parentSessionId": "VARCHAR",
                "agent_id": "VARCHAR", "agent": "VARCHAR", "cwd": "VARCHAR", "workspace_root": "VARCHAR",
                "model": "JSON", "started_at": "VARCHAR", "updated_at": "VARCHAR",
                "sessionID": "VARCHAR", "parentID": "VARCHAR",
                "time": {"created": "BIGINT", "start": "BIGINT"},
                "summary": "JSON", "error": {"name": "VARCHAR"},
                "tokens": {"input": "BIGINT", "output": "BIGINT", "reasoning": "BIGINT",
                           "cache": {"read": "BIGINT", "write": "BIGINT"}}
            }
        }') as j
    from lines as l
),

documents as (
    select
        p.*,
        case
            when j.rec = 'api_message' then 'api'
            when j.rec = 'ui_message' then 'ui'
            when j.rec = 'task_metadata' then 'meta'
            when j.rec = 'history_item' then 'history'
            when j.rec = 'manifest' then 'manifest'
            when j.rec = 'transcript' then 'transcript'
            when j.rec = 'sdk_message' then 'sdk'
            when j.rec is null and j."table" = 'session' then 'oc_session'
            when j.rec is null and j."table" = 'message' then 'oc_message'
            when j.rec is null and j."table" = 'part' then 'oc_part'
            when j.rec is null and j."table" = 'session_message' then 'oc_session_message'
            else 'unknown'
        end as fam,
        -- a kilo.db row's data, typed as `item` is above and kept the same: a field added to
        -- one only would come out null from the other (coalesce casts one struct to the other)
        coalesce(j.item, json_transform(j.data, '{
            "id": "VARCHAR", "role": "VARCHAR", "type": "VARCHAR", "say": "VARCHAR", "ask": "VARCHAR",
            "text": "VARCHAR", "ts": "BIGINT", "content": "JSON",
            "modelInfo": {"modelId": "VARCHAR", "id": "VARCHAR"},
            "metrics": {"inputTokens": "BIGINT", "outputTokens": "BIGINT",
                        "cacheReadTokens": "BIGINT", "cacheWriteTokens": "BIGINT"},
            "metadata": {"kind": "VARCHAR", "title": "VARCHAR"},
            "isSummary": "BOOLEAN",
            "task": "VARCHAR", "title": "VARCHAR", "parentTaskId": "VARCHAR", "workspace": "VARCHAR",
            "cwdOnTaskInitialization": "VARCHAR", "modelId": "VARCHAR",
            "model_id": "VARCHAR", "cline_version": "VARCHAR", "version": "VARCHAR", "path": "JSON",
            "cline_read_date": "BIGINT", "cline_edit_date": "BIGINT", "user_edit_date": "BIGINT",
            "roo_read_date": "BIGINT", "roo_edit_date": "BIGINT",
            "session_id": "VARCHAR", "parent_session_id": "VARCHAR", "parentSessionId": "VARCHAR",
            "agent_id": "VARCHAR", "agent": "VARCHAR", "cwd": "VARCHAR", "workspace_root": "VARCHAR",
            "model": "JSON", "started_at": "VARCHAR", "updated_at": "VARCHAR",
            "sessionID": "VARCHAR", "parentID": "VARCHAR",
            "time": {"created": "BIGINT", "start": "BIGINT"},
            "summary": "JSON", "error": {"name": "VARCHAR"},
            "tokens": {"input": "BIGINT", "output": "BIGINT", "reasoning": "BIGINT",
                       "cache": {"read": "BIGINT", "write": "BIGINT"}}
        }')) as d,
        -- apart: struct fields are case-insensitive and HistoryItem has `modelId`
        json_extract_string(j.data, '$.modelID') as oc_model_id
    from parsed as p
),

-- the content blocks of a message: the stored array (a string is one text block), the XML
-- tool blocks to_lines derived, or a kilo.db message's parts (each part's data with its id)
contents as (
    select
        *,
        case
            when fam in ('api', 'sdk') and j.xml_blocks is null then d.content
            when fam in ('api', 'sdk') and json_type(d.content) = 'ARRAY' then to_json(list_concat(
                json_transform(d.content, '["JSON"]'), json_transform(j.xml_blocks, '["JSON"]')))
            when fam in ('api', 'sdk') and json_type(d.content) = 'VARCHAR' then to_json(list_concat(
                [json_object('type', 'text', 'text', d.content ->> '$')], json_transform(j.xml_blocks, '["JSON"]')))
            -- a part's data with its id first (the first of two keys is the one read): built
            -- as text, since merging each part with json_merge_patch and writing the list out
            -- with to_json held a batch of long tool output several times over
            when fam = 'oc_message' and j.parts is not null then '[' || array_to_string(list_transform(j.parts,
                lambda p: case
                    when starts_with(p.data, '{') and p.data <> '{}' and p.id is not null
                        then '{"id":' || to_json(p.id) || ',' || substr(p.data, 2)
                    when starts_with(p.data, '{') and p.id is null then p.data
                    else json_object('id', p.id)
                end), ',') || ']'
            when fam = 'oc_part' then '[' || case
                when starts_with(j.data, '{') and j.data <> '{}' and j.id is not null
                    then '{"id":' || to_json(j.id) || ',' || substr(j.data, 2)
                when starts_with(j.data, '{') and j.id is null then j.data
                else json_object('id', j.id)
            end || ']'
        end as content
    from documents
),

blocks_of as (
    select
        *,
        json_transform(content, '[{
            "type": "VARCHAR", "text": "VARCHAR", "synthetic": "BOOLEAN", "ignored": "BOOLEAN"
        }]') as bl           -- null unless the content is a list
    from contents
),

texts as (
    select
        *,
        list_transform(bl, lambda x: x.type) as block_types,
        list_filter(bl, lambda x: x.type = 'text' and x.text is not null
            and not coalesce(x.ignored, false)) as text_blocks,
        -- the environment the extension appended to a user turn (cwd, time, open files)
        array_to_string(list_transform(
            list_filter(bl, lambda x: x.type = 'text' and x.text like '<environment_details>%'),
            lambda x: x.text), chr(10)) as env_text
    from blocks_of
),

typed as (
    select
        f.source,
        case
            when t.fam = 'history' then coalesce(t.d.id, t.j.session_id, f.session_hint)
            when t.fam = 'manifest' then coalesce(t.d.session_id, t.j.session_id, f.session_hint, f.file_stem)
            when t.fam in ('transcript', 'sdk') then coalesce(t.j.session_id, f.session_hint,
                regexp_replace(f.file_stem, '\.messages$', ''))
            when t.fam = 'oc_session' then coalesce(t.j.id, f.session_hint, f.file_stem)
            when t.fam like 'oc_%' then coalesce(t.j.session_id, t.d.sessionID, f.session_hint,
                'unlinked:' || coalesce(t.j.id, f.file_stem))
            else coalesce(f.session_hint, f.file_stem)
        end as session_id,
        coalesce(
            f.parent_session_hint,
            case
                when t.fam = 'history' then nullif(t.d.parentTaskId, '')
                when t.fam = 'manifest' then nullif(coalesce(t.d.parent_session_id, t.d.parentSessionId), '')
                when t.fam = 'oc_session' then nullif(t.j.parent_id, '')
            end
        ) as parent_session_id,
        t.file_id,
        f.file_epoch,
        f.source_file,
        t.line_no,
        t.byte_offset,
        f.run_id as ingest_run_id,
        case
            when t.fam = 'ui' then coalesce(t.d.type, 'ui_message')
            when t.fam = 'meta' then coalesce(t.j.section, 'task_metadata')
            when t.fam = 'manifest' then 'session_manifest'
            when t.fam = 'sdk' then 'message'
            when t.fam like 'oc_%' then t.j."table"
            else coalesce(t.j.rec, 'unknown')
        end as record_type,
        case
            when t.fam = 'ui' then coalesce(t.d.say, t.d.ask)
            when t.fam = 'api' then t.j.format
            when t.fam = 'oc_message' then t.d.error.name
            when t.fam = 'oc_part' then t.d.type
            when t.fam = 'oc_session_message' then t.j.type
            when t.fam = 'sdk' then t.d.metadata.kind
            when t.fam = 'transcript' then 'v' || t.d.version
        end as subtype,
        t.fam,
        case
            when t.fam in ('api', 'sdk') then t.d.id
            when t.fam = 'oc_message' then t.j.id
            when t.fam = 'oc_part' then t.j.id
            when t.fam = 'oc_session_message' then t.j.id
        end as message_id,
        case when t.fam = 'oc_message' then t.d.parentID end as parent_id,
        case
            when t.fam not in ('api', 'sdk', 'oc_message') then null
            when t.d.role in ('user', 'tool') then 'user'
            when t.d.role in ('assistant', 'system') then t.d.role
            when t.d.role is null and t.d.type = 'reasoning' and t.fam = 'api' then 'assistant'
        end as role,
        -- epoch milliseconds, or an ISO-8601 text (SDK manifest and transcript)
        case
            when t.fam = 'manifest' then t.d.started_at
            when t.fam = 'transcript' then t.d.updated_at
            when t.fam = 'meta' then cast(coalesce(t.d.ts,
                greatest(t.d.cline_edit_date, t.d.cline_read_date, t.d.roo_edit_date, t.d.roo_read_date,
                         t.d.user_edit_date)) as varchar)
            when t.fam = 'oc_message' then cast(coalesce(t.d.time.created, t.j.time_created) as varchar)
            when t.fam = 'oc_part' then cast(coalesce(t.d.time.start, t.d.time.created, t.j.time_created) as varchar)
            when t.fam like 'oc_%' then cast(t.j.time_created as varchar)
            else cast(t.d.ts as varchar)
        end as timestamp_raw,
        t.d.isSummary as is_summary,
        t.fam = 'api' and t.d.role is null and t.d.type = 'reasoning' as reasoning_item,
        t.d.metadata.kind in ('compaction', 'compaction_summary') as sdk_compaction,
        json_type(t.d.summary) = 'BOOLEAN' and t.d.summary::varchar = 'true' as oc_summary,
        case
            when t.fam = 'transcript' then t.d.agent
            when t.fam = 'manifest' then t.d.agent_id
        end as agent_id,
        case when t.fam = 'api' and t.d.role = 'assistant' then t.d.id end as api_message_id,
        case
            -- Roo Code names the model in the environment details of each user turn
            when t.fam = 'api' then coalesce(t.d.modelInfo.modelId, t.d.modelInfo.id,
                nullif(regexp_extract(t.env_text, '<model>([^<]+)</model>', 1), ''))
            when t.fam in ('sdk', 'ui') then coalesce(t.d.modelInfo.modelId, t.d.modelInfo.id)
            when t.fam = 'meta' then t.d.model_id
            when t.fam = 'history' then t.d.modelId
            when t.fam = 'manifest' and json_type(t.d.model) = 'VARCHAR' then t.d.model ->> '$'
            when t.fam = 'oc_message' then coalesce(t.oc_model_id, t.d.model ->> '$.modelID')
            when t.fam = 'oc_session' then t.j.model ->> '$.id'
        end as model,
        nullif(case
            when t.fam = 'api' then regexp_extract(t.env_text,
                '# Current (?:Working|Workspace) Directory \((.+?)\) Files', 1)
            when t.fam = 'history' then coalesce(t.d.workspace, t.d.cwdOnTaskInitialization)
            when t.fam = 'manifest' then coalesce(t.d.cwd, t.d.workspace_root)
            when t.fam = 'oc_session' then t.j.directory
            when t.fam = 'oc_message' and json_type(t.d.path) = 'OBJECT' then t.d.path ->> '$.cwd'
        end, '') as cwd,
        case
            when t.fam = 'meta' then t.d.cline_version
            when t.fam = 'oc_session' then nullif(t.j.version, '')
        end as version,
        case
            -- metadata rows: the session's title
            when t.fam = 'ui' and t.d.say = 'task' then t.d.text
            when t.fam = 'ui' and t.d.say in ('api_req_started', 'api_req_finished', 'deleted_api_reqs',
                                              'subagent_usage') then null
            when t.fam = 'ui' then t.d.text
            when t.fam = 'history' then nullif(trim(coalesce(nullif(trim(t.d.title), ''), t.d.task)), '')
            when t.fam = 'manifest' then t.d.metadata.title
            when t.fam = 'oc_session' then nullif(t.j.title, '')
            when t.fam = 'oc_part' and t.d.type = 'text' then t.d.text
            when t.fam not in ('api', 'sdk', 'oc_message') then null
            when starts_with(t.d.content, '"') then t.d.content ->> '$'     -- a string (not parsed again)
            -- kilo.db: what the user typed (text parts the agent did not add), else all of them
            when t.fam = 'oc_message'
                and len(list_filter(t.text_blocks, lambda x: not coalesce(x.synthetic, false))) > 0
                then array_to_string(list_transform(
                    list_filter(t.text_blocks, lambda x: not coalesce(x.synthetic, false)),
                    lambda x: x.text), chr(10))
            -- what the person typed is wrapped in <task> (first turn) or <user_message> (Roo)
            else nullif(array_to_string(list_transform(
                list_filter(t.text_blocks, lambda x: x.text not like '<environment_details>%'),
                lambda x: regexp_replace(x.text, '^<(task|user_message)>\n?(.*?)\n?</(task|user_message)>$', '\2', 's')),
                chr(10)), '')
        end as text,
        t.block_types,
        len(t.text_blocks) > 0
            and len(list_filter(t.text_blocks, lambda x: not coalesce(x.synthetic, false))) = 0
            as only_synthetic,
        len(t.env_text) > 0 as has_env,
        case
            when t.fam = 'ui' and t.d.say in ('api_req_started', 'api_req_finished', 'deleted_api_reqs',
                                              'subagent_usage') and json_valid(t.d.text)
                then json_transform(t.d.text, '{"tokensIn": "BIGINT", "tokensOut": "BIGINT",
                                                "cacheWrites": "BIGINT", "cacheReads": "BIGINT"}')
        end as ui_usage,
        t.d.metrics as metrics,
        case when t.fam = 'oc_message' then t.d.tokens end as oc_tokens,
        t.content,
        t.line as raw
    from texts as t
    join batch_files as f on f.file_id = t.file_id
),

timed as (
    select
        *,
        try_cast(timestamp_raw as bigint) as epoch
    from typed
),

classified as (
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
        null::varchar as logical_parent_id,
        role,
        timestamp_raw,
        case
            when epoch is null then timezone('UTC', try_cast(timestamp_raw as timestamptz))
            when abs(epoch) < 100000000000 then make_timestamp(epoch * 1000000)
            when abs(epoch) < 100000000000000 then make_timestamp(epoch * 1000)
        end as "timestamp",
        false as is_sidechain,
        false as is_meta,
        coalesce(is_summary, false) or coalesce(sdk_compaction, false) or coalesce(oc_summary, false)
            as is_compact_summary,
        agent_id,
        null::varchar as request_id,
        api_message_id,
        model,
        cwd,
        null::varchar as git_branch,
        version,
        text,
        case
            when ui_usage is not null then ui_usage.tokensIn
            when fam = 'sdk' and metrics.inputTokens is not null then
                case when metrics.inputTokens >= coalesce(metrics.cacheReadTokens, 0)
                    then metrics.inputTokens - coalesce(metrics.cacheReadTokens, 0)
                    else metrics.inputTokens end
            when oc_tokens is not null then oc_tokens.input
        end as input_tokens,
        case
            when ui_usage is not null then ui_usage.tokensOut
            when fam = 'sdk' then metrics.outputTokens
            when oc_tokens is not null then oc_tokens.output + coalesce(oc_tokens.reasoning, 0)
        end as output_tokens,
        case
            when ui_usage is not null then ui_usage.cacheWrites
            when fam = 'sdk' then metrics.cacheWriteTokens
            when oc_tokens is not null then oc_tokens.cache.write
        end as cache_creation_tokens,
        case
            when ui_usage is not null then ui_usage.cacheReads
            when fam = 'sdk' then metrics.cacheReadTokens
            when oc_tokens is not null then oc_tokens.cache.read
        end as cache_read_tokens,
        content,
        raw,
        case
            when fam in ('history', 'manifest', 'oc_session') then 'metadata'
            when fam = 'ui' and subtype = 'task' then 'metadata'
            when fam = 'ui' and subtype in ('api_req_started', 'api_req_finished', 'deleted_api_reqs',
                                            'subagent_usage') then 'api_request'
            when fam = 'ui' then 'ui_message'
            when fam = 'meta' and record_type in ('model_usage', 'environment_history') then 'metadata'
            when fam = 'meta' and record_type = 'files_in_context' then 'file_context'
            when fam = 'meta' then 'task_metadata'
            when fam = 'transcript' then 'transcript'
            when fam = 'oc_part' then 'part'
            when fam = 'oc_session_message' then 'session_message'
            when role is null then 'unknown'
            when role = 'system' then 'system'
            when role = 'user' and list_has_any(block_types, ['tool_result', 'tool-result']) then 'tool_result'
            -- an XML-era tool result no call of the previous message matched
            when role = 'user' and fam = 'api' and regexp_matches(coalesce(text, ''), '^\[[a-z_]+[^\]\n]*\] Result:')
                then 'tool_result'
            when role = 'user' and list_contains(block_types, 'compaction') then 'compact_boundary'
            when role = 'user' then 'prompt'
            when list_has_any(block_types, ['tool_use', 'tool-call', 'tool']) then 'tool_use'
            when reasoning_item then 'thinking'
            when len(block_types) > 0 and len(list_filter(block_types,
                lambda b: b not in ('thinking', 'redacted_thinking', 'reasoning'))) = 0 then 'thinking'
            else 'response'
        end as kind,
        case
            when role <> 'user' or role is null then null
            when coalesce(is_summary, false) or coalesce(sdk_compaction, false)
                or text like 'This session is being continued from a previous conversation%'
                then 'compact_summary'
            when list_contains(block_types, 'compaction') then 'compaction'
            when text like '[TASK RESUMPTION]%' then 'task_resumption'
            when text like '[ERROR]%' then 'harness_error'
            when text like '<explicit_instructions%' then 'slash_command'
            when text is null and has_env and len(list_filter(block_types, lambda b: b <> 'text')) = 0
                then 'environment_context'
            when fam = 'oc_message' and only_synthetic then 'synthetic'
        end as harness_kind
    from timed
),

final as (
    select
        *,
        coalesce(
            strftime("timestamp", '%Y-%m'),
            -- a file with no time at all (an older build's API history): Cline's task id is
            -- Date.now() at creation, and the SDK's session id starts with it
            strftime(make_timestamp(try_cast(nullif(regexp_extract(session_id, '^([0-9]{13})(_|$)', 1), '')
                as bigint) * 1000), '%Y-%m')
        ) as month
    from classified
)

select * from final
