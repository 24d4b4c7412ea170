-- grain: one row per line made of an Antigravity store: a transcript step (every physical
--        line of transcript[_full].jsonl), an agent message file, a history.jsonl line, or a
--        trajectory_meta / steps row of conversations/<uuid>.db; every line kept
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id).
--        A transcript's lines may come after context lines (antigravity__context.sql: the
--        last planner response or user input loaded earlier and the steps after it), numbered
--        below zero so they come first; they pair the new tool steps with their calls and are
--        not returned. A context line's own number is its line_no + 2^50 (etl/load.py).
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "step_index": "VARCHAR", "source": "VARCHAR", "type": "VARCHAR", "status": "VARCHAR",
            "created_at": "VARCHAR", "content": "JSON", "thinking": "VARCHAR", "tool_calls": "JSON",
            "role": "VARCHAR", "timestamp": "VARCHAR", "conversation_id": "VARCHAR",
            "cwd": "VARCHAR", "title": "VARCHAR", "name": "VARCHAR", "output": "VARCHAR",
            "id": "VARCHAR", "sender": "VARCHAR", "hideFromUser": "BOOLEAN",
            "display": "VARCHAR", "workspace": "VARCHAR", "conversationId": "VARCHAR",
            "table": "VARCHAR", "trajectory_id": "VARCHAR", "trajectory_type": "VARCHAR",
            "idx": "VARCHAR", "step_type": "VARCHAR"
        }') as j
    from lines as l
),

shaped as (
    select
        p.*,
        f.source,
        f.file_epoch,
        f.source_file,
        f.file_stem,
        f.session_hint,
        f.run_id,
        case
            when j."table" is not null then 'db'
            when f.file_stem = 'history' and j.step_index is null and j.type is distinct from 'message'
                then 'history'
            when regexp_matches(f.source_file, '[/\\]\.system_generated[/\\]messages[/\\][^/\\]+\.json$')
                then 'message'
            when j.step_index is null and j.type in ('session', 'message', 'tool', 'system', 'thought')
                then 'drift'
            else 'step'
        end as lane,
        case when json_type(j.content) = 'VARCHAR' then j.content ->> '$'
             when j.content is not null then j.content::varchar end as content_text,
        case when json_type(j.tool_calls) = 'ARRAY' then json_transform(j.tool_calls,
            '[{"name": "VARCHAR", "args": "JSON"}]') end as calls
    from parsed as p
    join batch_files as f on f.file_id = p.file_id
),

steps as (
    select
        *,
        coalesce(len(calls), 0) as n_calls,
        lane = 'step' and j.source = 'MODEL' and j.type is not null
            and j.type not in ('PLANNER_RESPONSE', 'GENERIC', 'USER_INPUT', 'CHECKPOINT', 'EPHEMERAL_MESSAGE',
                               'SYSTEM_MESSAGE', 'CONVERSATION_HISTORY') as is_tool_step,
        -- the planner response or user input a step follows: tool steps answer its calls in order
        max(case when lane = 'step' and j.type in ('PLANNER_RESPONSE', 'USER_INPUT') then line_no end)
            over (partition by file_id order by line_no rows between unbounded preceding and current row)
            as anchor
    from shaped
),

paired as (
    select
        s.*,
        -- the anchor's own line number (a context line's line_no is shifted below zero)
        case when s.anchor < 0 then s.anchor + 1125899906842624 else s.anchor end as anchor_line,
        a.n_calls as anchor_calls,
        a.calls as anchor_call_list,
        row_number() over (partition by s.file_id, s.anchor, s.is_tool_step order by s.line_no) as k
    from steps as s
    left join steps as a on a.file_id = s.file_id and a.line_no = s.anchor
),

linked as (
    select
        *,
        case when is_tool_step and k <= coalesce(anchor_calls, 0) then 'step-' || anchor_line || '-' || (k - 1) end
            as paired_call,
        case when is_tool_step and k <= coalesce(anchor_calls, 0) then anchor_call_list[k].name end as paired_name,
        nullif(trim(regexp_extract(content_text, '<USER_REQUEST>\s*([\s\S]*?)\s*</USER_REQUEST>', 1)), '')
            as user_request,
        nullif(trim(regexp_extract(
            regexp_extract(content_text, '<USER_SETTINGS_CHANGE>([\s\S]*?)</USER_SETTINGS_CHANGE>', 1),
            '`Model Selection` from [\s\S]*? to (.+?)(?:\. |\.?\s*\n|\.?\s*$)', 1)), '') as settings_model
    from paired
),

typed as (
    select
        source,
        case
            when lane = 'history' then coalesce(j.conversationId, file_stem)
            when lane = 'db' then file_stem
            else coalesce(
                session_hint,
                nullif(regexp_extract(source_file, '[/\\]brain[/\\]([^/\\]+)[/\\]', 1), ''),
                j.conversation_id,
                file_stem)
        end as session_id,
        null::varchar as parent_session_id,
        file_id,
        file_epoch,
        source_file,
        line_no,
        byte_offset,
        run_id as ingest_run_id,
        case
            when lane = 'db' then j."table"
            when lane = 'history' then 'history'
            when lane = 'message' then 'message'
            else coalesce(j.type, 'unknown')
        end as record_type,
        case
            when lane = 'db' then coalesce(j.trajectory_type, j.step_type)
            when lane = 'history' then j.type
            when lane = 'message' then j.sender
            when lane = 'drift' then j.role
            else j.source
        end as subtype,
        case
            when lane = 'db' then coalesce(j.trajectory_id, j.idx)
            when lane = 'message' then j.id
            when lane = 'drift' and j.type = 'session' then j.conversation_id
            when lane = 'step' then j.step_index
        end as message_id,
        null::varchar as parent_id,
        null::varchar as logical_parent_id,
        case
            when lane in ('db', 'history') then null
            when lane = 'message' then case when j.sender = 'system' then 'system' else 'assistant' end
            when lane = 'drift' then case j.type
                when 'message' then case when j.role in ('user', 'assistant', 'system') then j.role end
                when 'tool' then 'user'
                when 'system' then 'system'
                when 'thought' then 'assistant'
            end
            when j.type = 'USER_INPUT' then 'user'
            when j.type in ('PLANNER_RESPONSE', 'GENERIC') then 'assistant'
            when is_tool_step then 'user'
            when j.type in ('CHECKPOINT', 'EPHEMERAL_MESSAGE', 'SYSTEM_MESSAGE') then 'system'
            when j.type = 'CONVERSATION_HISTORY' then null
            when j.source = 'SYSTEM' then 'system'
            when j.source = 'USER_EXPLICIT' then 'user'
        end as role,
        case
            when lane = 'history' then j.timestamp
            when lane = 'step' then j.created_at
            when lane = 'drift' then coalesce(j.timestamp, j.created_at)
            when lane = 'message' then j.timestamp
        end as timestamp_raw,
        false as is_sidechain,
        coalesce(lane = 'message' and j.hideFromUser, false) as is_meta,
        lane = 'step' and j.type is not distinct from 'CHECKPOINT' as is_compact_summary,
        case when lane = 'message' then j.sender end as agent_id,
        null::varchar as request_id,
        null::varchar as api_message_id,
        case when lane = 'step' and j.type = 'USER_INPUT' and settings_model <> 'None' then settings_model end
            as model,
        case
            when lane = 'history' then nullif(j.workspace, '')
            when lane = 'drift' and j.type = 'session' then nullif(j.cwd, '')
        end as cwd,
        null::varchar as git_branch,
        null::varchar as version,
        case
            when lane = 'db' then null
            when lane = 'history' then j.display
            when lane = 'message' then content_text
            when lane = 'drift' then case j.type
                when 'session' then nullif(trim(j.title), '')
                when 'message' then content_text
                when 'system' then content_text
            end
            when j.type = 'USER_INPUT' then coalesce(user_request,
                case when starts_with(ltrim(content_text), '<') then null else nullif(trim(content_text), '') end)
            when j.type in ('PLANNER_RESPONSE', 'GENERIC') then nullif(content_text, '')
            when is_tool_step then null
            when j.type = 'CONVERSATION_HISTORY' then null
            else nullif(content_text, '')
        end as text,
        null::bigint as input_tokens,
        null::bigint as output_tokens,
        null::bigint as cache_creation_tokens,
        null::bigint as cache_read_tokens,
        -- one normalized block list (see normalized__blocks.sql)
        case
            when lane = 'drift' and j.type = 'tool' then [
                json_object('type', 'tool_use', 'call_id', 'step-' || line_no, 'tool_name', j.name),
                json_object('type', 'tool_result', 'call_id', 'step-' || line_no, 'tool_name', j.name,
                            'output_text', coalesce(j.output, content_text), 'is_error', false)]
            when lane = 'drift' and j.type = 'thought' then [json_object('type', 'thinking', 'text', content_text)]
            when lane = 'drift' and j.type = 'message' then [json_object('type', 'text', 'text', content_text)]
            when lane = 'message' then [json_object('type', 'text', 'text', content_text)]
            when lane <> 'step' then null
            when j.type in ('PLANNER_RESPONSE', 'GENERIC') then list_concat(
                case when nullif(j.thinking, '') is not null then [json_object('type', 'thinking', 'text', j.thinking)] end,
                case when nullif(content_text, '') is not null then [json_object('type', 'text', 'text', content_text)] end,
                list_transform(calls, lambda c, i: json_object('type', 'tool_use',
                    'call_id', 'step-' || line_no || '-' || (i - 1), 'tool_name', c.name,
                    'tool_input', case
                        when json_type(c.args) = 'OBJECT' then to_json(map_from_entries(list_transform(
                            map_entries(json_transform(c.args, '"MAP(VARCHAR, VARCHAR)"')),
                            lambda e: {'key': e.key, 'value': case when json_valid(e.value) then json(e.value)
                                                                   else to_json(e.value) end})))
                        else c.args
                    end)))
            when is_tool_step then list_concat(
                case when paired_call is null then [json_object('type', 'tool_use', 'call_id', 'step-' || line_no,
                    'tool_name', lower(j.type))] end,
                [json_object('type', 'tool_result', 'call_id', coalesce(paired_call, 'step-' || line_no),
                    'tool_name', coalesce(paired_name, lower(j.type)), 'output_text', content_text,
                    'is_error', coalesce(upper(j.status) in ('ERROR', 'FAILED', 'FAILURE', 'CANCELED',
                                                              'CANCELLED'), false))])
            when j.type = 'USER_INPUT' and coalesce(user_request, content_text) is not null
                then [json_object('type', 'text', 'text', coalesce(user_request, content_text))]
        end as block_list,
        line as raw,
        lane,
        j.type as step_type_name,
        n_calls,
        is_tool_step,
        user_request,
        content_text
    from linked
),

classified as (
    select
        * exclude (block_list, lane, step_type_name, n_calls, is_tool_step, user_request, content_text),
        case when len(block_list) > 0 then block_list end as content,
        case
            when lane = 'db' and record_type = 'trajectory_meta' then 'metadata'
            when lane = 'db' then 'unknown'
            when lane = 'history' then 'prompt_history'
            when lane = 'message' then case when role = 'system' then 'system' else 'response' end
            when lane = 'drift' then case step_type_name
                when 'session' then 'metadata'
                when 'message' then case role when 'user' then 'prompt' when 'assistant' then 'response'
                                              when 'system' then 'system' else 'unknown' end
                when 'tool' then 'tool_result'
                when 'system' then 'system'
                when 'thought' then 'thinking'
            end
            when step_type_name = 'USER_INPUT' then 'prompt'
            when step_type_name = 'PLANNER_RESPONSE' and n_calls > 0 then 'tool_use'
            when step_type_name = 'PLANNER_RESPONSE' and nullif(content_text, '') is null
                and len(block_list) > 0 then 'thinking'
            when step_type_name in ('PLANNER_RESPONSE', 'GENERIC') then 'response'
            when is_tool_step then 'tool_result'
            when step_type_name = 'CHECKPOINT' then 'compact_boundary'
            when step_type_name = 'CONVERSATION_HISTORY' then 'conversation_history'
            when role = 'system' then 'system'
            when role = 'user' then 'prompt'
            else 'unknown'
        end as kind,
        case
            when role is distinct from 'user' or lane <> 'step' or is_tool_step then null
            when user_request is null and starts_with(ltrim(coalesce(content_text, '')), '<') then 'meta'
        end as harness_kind,
        case
            when timestamp_raw is null then null
            when lane = 'history' then case
                when try_cast(timestamp_raw as bigint) is not null
                    then make_timestamp(try_cast(timestamp_raw as bigint) * 1000) end
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
    where line_no > 0     -- not the context lines
)

select * from final
