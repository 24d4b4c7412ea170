-- grain: one row per line of a Gemini CLI session file (op-log line or legacy document entry), every line kept
-- input: lines(file_id, line_no, byte_offset, line) written by adapters/gemini_cli.to_lines, each
--        {"cv": {offset, session_id, op, state, parent, sidechain}, "line": "<the original record>"}
--        (cv = what the replay of the whole file found), and batch_files(...)
-- Lambdas here use json_extract/json_extract_string, never the -> operators (DuckDB would
-- read those as lambda arrows).
with wrapped as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "cv": {
                "offset": "BIGINT", "session_id": "VARCHAR", "op": "VARCHAR",
                "state": "VARCHAR", "parent": "VARCHAR", "sidechain": "BOOLEAN"
            },
            "line": "VARCHAR"
        }') as w
    from lines as l
),

parsed as (
    select
        file_id,
        line_no,
        case when w.line is null then byte_offset else w.cv."offset" end as byte_offset,
        w.cv.op as cv_op,
        w.cv.state as state,
        w.cv.parent as parent,
        w.cv.session_id as cv_session_id,
        coalesce(w.cv.sidechain, false) as cv_sidechain,
        coalesce(w.line, line) as raw,
        json_transform(coalesce(w.line, line), '{
            "id": "VARCHAR", "type": "VARCHAR", "role": "VARCHAR",
            "timestamp": "VARCHAR", "ts": "VARCHAR",
            "content": "JSON", "parts": "JSON", "displayContent": "JSON",
            "model": "VARCHAR",
            "tokens": {
                "input": "BIGINT", "output": "BIGINT", "cached": "BIGINT",
                "thoughts": "BIGINT", "tool": "BIGINT", "total": "BIGINT"
            },
            "toolCalls": [{
                "id": "VARCHAR", "name": "VARCHAR", "args": "JSON",
                "result": "JSON", "status": "VARCHAR"
            }],
            "thoughts": [{"subject": "VARCHAR", "description": "VARCHAR"}],
            "sessionId": "VARCHAR", "startTime": "VARCHAR", "start_time": "VARCHAR",
            "kind": "VARCHAR", "directories": "VARCHAR[]", "summary": "VARCHAR",
            "$set": {
                "lastUpdated": "VARCHAR", "summary": "VARCHAR",
                "directories": "VARCHAR[]", "messages": "JSON"
            },
            "$rewindTo": "VARCHAR", "projectHash": "VARCHAR"
        }') as j
    from wrapped
),

-- a line the replay could not parse but DuckDB can is classified here, without replay facts
ops as (
    select
        *,
        coalesce(cv_op, case
            when j."$rewindTo" is not null then 'rewind'
            when j.id is not null then 'message'
            when j."$set" is not null then 'set'
            when j.sessionId is not null and j.projectHash is not null then 'session'
            else 'unknown'
        end) as op
    from parsed
),

-- PartListUnion (a string, one Part, or a list of Parts and strings) as a list of typed Parts
-- (a bare string becomes {"text": ...}). Each part is parsed once, straight into its type:
-- normalizing the list as JSON first and parsing that back held a batch's tool output several
-- times over and ran a worker out of memory.
normalized as (
    select
        *,
        coalesce(j.type, j.role) as msg_type,
        list_transform(
            case
                when starts_with(coalesce(j.content, j.parts), '[')
                    then json_transform(coalesce(j.content, j.parts), '["JSON"]')
                when starts_with(coalesce(j.content, j.parts), '"') or starts_with(coalesce(j.content, j.parts), '{')
                    then [coalesce(j.content, j.parts)]
            end,
            lambda p: json_transform(
                case when starts_with(p, '"') then json_object('text', json_extract_string(p, '$')) else p end,
                '{
                    "text": "VARCHAR", "thought": "BOOLEAN",
                    "functionCall": {"id": "VARCHAR", "name": "VARCHAR", "args": "JSON"},
                    "functionResponse": {"id": "VARCHAR", "name": "VARCHAR", "response": "JSON"},
                    "inlineData": {"mimeType": "VARCHAR", "data": "VARCHAR"},
                    "fileData": {"mimeType": "VARCHAR", "fileUri": "VARCHAR"},
                    "executableCode": "JSON", "codeExecutionResult": "JSON"
                }')) as pl,
        list_transform(
            case
                when starts_with(j.displayContent, '[') then json_transform(j.displayContent, '["JSON"]')
                when starts_with(j.displayContent, '"') or starts_with(j.displayContent, '{') then [j.displayContent]
            end,
            lambda p: json_transform(
                case when starts_with(p, '"') then json_object('text', json_extract_string(p, '$')) else p end,
                '{"text": "VARCHAR", "thought": "BOOLEAN"}')) as dl,
        j.toolCalls as tool_calls,     -- null unless a list
        j.thoughts as thoughts
    from ops
),

typed as (
    select
        *,
        nullif(array_to_string(list_filter(
            list_transform(pl, lambda x: case when coalesce(x.thought, false) then null else x.text end),
            lambda t: t is not null), chr(10)), '') as content_text,
        nullif(array_to_string(list_filter(
            list_transform(dl, lambda x: case when coalesce(x.thought, false) then null else x.text end),
            lambda t: t is not null), chr(10)), '') as display_text,
        coalesce(len(list_filter(pl, lambda x: x.functionResponse is not null)), 0) as n_responses,
        coalesce(len(list_filter(pl, lambda x: x.functionCall is not null)), 0) as n_calls,
        coalesce(len(list_filter(pl, lambda x: coalesce(x.thought, false))), 0) as n_thought_parts,
        coalesce(len(tool_calls), 0) as n_tool_calls,
        coalesce(len(thoughts), 0) as n_thoughts,
        case
            when op <> 'message' or state = 'superseded' then null
            when msg_type = 'user' then 'user'
            when msg_type in ('gemini', 'model', 'assistant') then 'assistant'
            when msg_type in ('info', 'error', 'warning', 'system') then 'system'
        end as role,
        case op
            when 'message' then coalesce(j.timestamp, j.ts)
            when 'session' then coalesce(j.startTime, j.start_time)
            when 'set' then j."$set".lastUpdated
        end as timestamp_raw
    from normalized
),

classified as (
    select
        *,
        case
            when op = 'message' and state = 'superseded' then 'superseded'
            when op = 'message' and role = 'user' and n_responses > 0 then 'tool_result'
            when op = 'message' and role = 'user' then 'prompt'
            when op = 'message' and role = 'assistant' and (n_tool_calls > 0 or n_calls > 0) then 'tool_use'
            when op = 'message' and role = 'assistant' and content_text is null
                and (n_thoughts > 0 or n_thought_parts > 0) then 'thinking'
            when op = 'message' and role = 'assistant' then 'response'
            when op = 'message' and role = 'system' then 'system'
            when op = 'session' then 'metadata'
            when op = 'set' and json_type(j."$set".messages) = 'ARRAY' then 'checkpoint'
            when op = 'set' then 'metadata'
            when op = 'rewind' then 'rewind'
            else 'unknown'
        end as kind,
        case
            when op = 'message' and role = 'user' then coalesce(display_text, content_text)
            when op = 'message' then content_text
            when op = 'session' then j.summary
            when op = 'set' then j."$set".summary
        end as text
    from typed
),

final as (
    select
        f.source,
        coalesce(c.cv_session_id, f.file_stem) as session_id,
        f.parent_session_hint as parent_session_id,
        c.file_id,
        f.file_epoch,
        f.source_file,
        c.line_no,
        c.byte_offset,
        f.run_id as ingest_run_id,
        case c.op
            when 'message' then coalesce(c.msg_type, 'message')
            when 'session' then 'session'
            when 'set' then '$set'
            when 'rewind' then '$rewindTo'
            else 'unknown'
        end as record_type,
        case when c.op = 'session' then c.j.kind end as subtype,
        case when c.op = 'message' then c.j.id end as message_id,
        case when c.op in ('message', 'rewind', 'set') then c.parent end as parent_id,
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
        c.cv_sidechain or f.parent_session_hint is not null as is_sidechain,
        false as is_meta,
        coalesce(ltrim(c.text) like '<state_snapshot>%' and c.kind = 'prompt', false) as is_compact_summary,
        null::varchar as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case when c.op = 'message' then c.j.model end as model,
        case c.op
            when 'session' then c.j.directories[1]
            when 'set' then c.j."$set".directories[1]
        end as cwd,
        null::varchar as git_branch,
        null::varchar as version,
        c.text,
        case when c.role is not null then c.j.tokens.input end as input_tokens,
        case when c.role is not null then c.j.tokens.output end as output_tokens,
        null::bigint as cache_creation_tokens,
        case when c.role is not null then c.j.tokens.cached end as cache_read_tokens,
        -- the parsed lists, for gemini_cli__blocks; not stored
        case when c.role is not null then {'parts': c.pl, 'thoughts': c.thoughts, 'toolCalls': c.tool_calls}
        end as content,
        c.raw,
        c.kind,
        case
            when c.role <> 'user' or c.role is null or c.kind <> 'prompt' then null
            when ltrim(c.text) like '<session_context>%' then 'environment_context'
            when ltrim(c.text) like '<hook_context>%' then 'hook_context'
            when ltrim(c.text) like '<state_snapshot>%' then 'compact_summary'
            when ltrim(c.text) like '/%' then 'slash_command'
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
