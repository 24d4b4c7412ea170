-- grain: one row per OpenHands file: a V1 event (event-<n>-<id>.json), a V1 base_state.json,
--        a V0 event (events/<n>.json) or a V0 metadata.json; every file kept (an unknown
--        event kind is kind 'unknown')
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        json_transform(l.line, '{
            "kind": "VARCHAR", "id": "VARCHAR", "timestamp": "VARCHAR", "source": "VARCHAR",
            "llm_message": {"role": "VARCHAR", "content": "JSON", "reasoning_content": "VARCHAR",
                            "thinking_blocks": "JSON"},
            "llm_response_id": "VARCHAR", "sender": "VARCHAR",
            "thought": "JSON", "reasoning_content": "VARCHAR", "thinking_blocks": "JSON",
            "action": "JSON", "tool_name": "VARCHAR", "tool_call_id": "VARCHAR",
            "tool_call": {"id": "VARCHAR", "name": "VARCHAR", "arguments": "VARCHAR"},
            "observation": "JSON", "action_id": "VARCHAR",
            "rejection_reason": "VARCHAR", "error": "VARCHAR", "detail": "VARCHAR",
            "system_prompt": "JSON", "summary": "VARCHAR",
            "message": "VARCHAR", "cause": "VARCHAR", "args": "JSON", "extras": "JSON",
            "content": "VARCHAR",
            "tool_call_metadata": {"function_name": "VARCHAR", "tool_call_id": "VARCHAR",
                                   "model_response": {"id": "VARCHAR", "model": "VARCHAR"}},
            "llm_metrics": {"accumulated_token_usage": {"model": "VARCHAR"}},
            "agent": {"llm": {"model": "VARCHAR"}},
            "workspace": {"working_dir": "VARCHAR", "path": "VARCHAR"},
            "stats": "JSON", "tags": {"title": "VARCHAR"}, "title": "VARCHAR",
            "llm_model": "VARCHAR", "selected_branch": "VARCHAR", "created_at": "VARCHAR",
            "prompt_tokens": "BIGINT", "completion_tokens": "BIGINT",
            "cache_read_tokens": "BIGINT", "cache_write_tokens": "BIGINT"
        }') as j
    from lines as l
),

-- A JSON value's type is read from its first character (DuckDB writes the JSON it hands over
-- minified): a full parse of an observation only to learn it is an object, several times a
-- line, held a batch's tool output several times over and ran a worker out of memory.
shaped as (
    select
        p.*,
        f.source,
        f.file_epoch,
        f.source_file,
        f.run_id,
        f.parent_session_hint,
        coalesce(
            f.session_hint,
            nullif(regexp_extract(f.source_file, '([^/\\]+)[/\\]events[/\\][^/\\]+$', 1), ''),
            f.file_stem
        ) as session_id,
        -- V0 writes the action/observation type as a string; V1 nests an object with a kind
        coalesce(j.kind is null
            and (starts_with(j.action, '"') or starts_with(j.observation, '"')), false) as v0,
        case
            when j.kind is not null then j.kind
            when starts_with(j.action, '"') then j.action ->> '$'
            when starts_with(j.observation, '"') then j.observation ->> '$'
            when f.file_stem = 'base_state' then 'base_state'
            when f.file_stem = 'metadata' then 'conversation_metadata'
            else 'unknown'
        end as rtype,
        case
            when starts_with(j.action, '"') then 'action'
            when starts_with(j.observation, '"') then 'observation'
            when starts_with(j.action, '{') then j.action ->> '$.kind'
            when starts_with(j.observation, '{') then j.observation ->> '$.kind'
        end as sub,
        case when starts_with(j.extras, '{') then j.extras end as extras,
        case when starts_with(j.args, '{') then j.args end as args,
        case when starts_with(j.observation, '{') then j.observation end as obs
    from parsed as p
    join batch_files as f on f.file_id = p.file_id
),

-- content parts (text / image), thought parts and thinking blocks, decoded once
decoded as (
    select
        *,
        case when starts_with(j.llm_message.content, '[') then json_transform(j.llm_message.content,
            '[{"type": "VARCHAR", "text": "VARCHAR", "image_urls": ["VARCHAR"]}]') end as msg_parts,
        case when starts_with(j.thought, '[') then json_transform(j.thought,
            '[{"type": "VARCHAR", "text": "VARCHAR"}]') end as thought_parts,
        case when starts_with(coalesce(j.thinking_blocks, j.llm_message.thinking_blocks), '[')
            then json_transform(coalesce(j.thinking_blocks, j.llm_message.thinking_blocks),
                '[{"type": "VARCHAR", "thinking": "VARCHAR"}]') end as think_parts,
        case when starts_with(obs -> '$.content', '[') then json_transform(obs -> '$.content',
            '[{"type": "VARCHAR", "text": "VARCHAR"}]') end as obs_parts,
        case when starts_with(args -> '$.image_urls', '[')
            then json_transform(args -> '$.image_urls', '["VARCHAR"]') end as v0_images,
        coalesce(j.tool_call_metadata.tool_call_id,
                 case when j.cause is not null then 'oh-event-' || j.cause end) as v0_result_call,
        coalesce(j.tool_call_metadata.tool_call_id, 'oh-event-' || j.id) as v0_call
    from shaped
),

texts as (
    select
        *,
        nullif(array_to_string(list_filter(list_transform(msg_parts,
            lambda x: case when x.type = 'text' then x.text end), lambda t: t is not null), chr(10)), '')
            as msg_text,
        nullif(array_to_string(list_filter(list_transform(thought_parts,
            lambda x: case when x.type = 'text' then x.text end), lambda t: t is not null), chr(10)), '')
            as thought_text,
        nullif(array_to_string(list_filter(list_transform(obs_parts,
            lambda x: x.text), lambda t: t is not null), chr(10)), '') as obs_text,
        list_concat(
            list_transform(list_filter(think_parts, lambda x: nullif(x.thinking, '') is not null),
                lambda x: json_object('type', 'thinking', 'text', x.thinking)),
            case when nullif(coalesce(j.reasoning_content, j.llm_message.reasoning_content), '') is not null
                then [json_object('type', 'thinking', 'text',
                                  coalesce(j.reasoning_content, j.llm_message.reasoning_content))]
            end
        ) as think_blocks,
        case
            when json_valid(j.tool_call.arguments) then json(j.tool_call.arguments)
            when j.tool_call.arguments is not null then to_json(j.tool_call.arguments)
            else j.action
        end as call_input,
        try_cast(extras ->> '$.metadata.exit_code' as bigint) as v0_exit
    from decoded
),

typed as (
    select
        source,
        session_id,
        parent_session_hint as parent_session_id,
        file_id,
        file_epoch,
        source_file,
        line_no,
        byte_offset,
        run_id as ingest_run_id,
        rtype as record_type,
        sub as subtype,
        j.id as message_id,
        case
            when rtype in ('ObservationEvent', 'UserRejectObservation') then j.action_id
            when v0 and sub = 'observation' then j.cause
        end as parent_id,
        null::varchar as logical_parent_id,
        case
            when rtype = 'MessageEvent' then coalesce(
                case when j.llm_message.role in ('user', 'assistant', 'system') then j.llm_message.role end,
                case j.source when 'user' then 'user' when 'agent' then 'assistant' end)
            when rtype in ('SystemPromptEvent', 'Condensation') then 'system'
            when rtype = 'ActionEvent' then 'assistant'
            when rtype in ('ObservationEvent', 'UserRejectObservation', 'AgentErrorEvent',
                           'CondensationSummaryEvent') then 'user'
            when not v0 then null
            when rtype in ('change_agent_state', 'agent_state_changed', 'recall', 'null',
                           'condensation_request') then null
            when sub = 'action' and rtype = 'message' then
                case j.source when 'user' then 'user' when 'agent' then 'assistant' end
            when sub = 'action' and rtype in ('system', 'condensation') then 'system'
            when sub = 'action' then case when j.source = 'agent' then 'assistant' else 'user' end
            when v0_result_call is not null then 'user'
            else 'system'
        end as role,
        case when v0 or rtype <> 'conversation_metadata' then j.timestamp else j.created_at end
            as timestamp_raw,
        parent_session_hint is not null as is_sidechain,
        false as is_meta,
        coalesce(
            rtype = 'CondensationSummaryEvent'
            or (rtype = 'Condensation' and j.summary is not null)
            or (v0 and rtype = 'condensation' and args ->> '$.summary' is not null),
            false) as is_compact_summary,
        case when rtype = 'MessageEvent' then j.sender end as agent_id,
        null::varchar as request_id,
        case
            when rtype in ('MessageEvent', 'ActionEvent') then j.llm_response_id
            when v0 then j.tool_call_metadata.model_response.id
        end as api_message_id,
        case
            when rtype = 'base_state' then nullif(j.agent.llm.model, '')
            when rtype = 'conversation_metadata' then nullif(j.llm_model, '')
            when v0 and sub = 'action' and j.source = 'agent' then coalesce(
                j.tool_call_metadata.model_response.model,
                nullif(j.llm_metrics.accumulated_token_usage.model, 'default'))
        end as model,
        case
            when rtype = 'base_state' then coalesce(j.workspace.working_dir, j.workspace.path)
            when v0 and sub = 'observation' then extras ->> '$.metadata.working_dir'
        end as cwd,
        case when rtype = 'conversation_metadata' then nullif(j.selected_branch, '') end as git_branch,
        case when v0 and rtype = 'system' then args ->> '$.openhands_version' end as version,
        case
            when rtype = 'MessageEvent' then msg_text
            when rtype = 'SystemPromptEvent' then case
                when starts_with(j.system_prompt, '{') then j.system_prompt ->> '$.text'
                when starts_with(j.system_prompt, '"') then j.system_prompt ->> '$'
            end
            when rtype = 'ActionEvent' then nullif(concat_ws(chr(10), thought_text,
                case when sub = 'FinishAction' then j.action ->> '$.message' end), '')
            when rtype in ('Condensation', 'CondensationSummaryEvent') then j.summary
            when rtype = 'base_state' then nullif(trim(coalesce(j.title, j.tags.title)), '')
            when rtype = 'conversation_metadata' then nullif(trim(j.title), '')
            when not v0 then null
            when sub = 'action' and rtype = 'message' then coalesce(args ->> '$.content', j.message)
            when sub = 'action' and rtype = 'system' then args ->> '$.content'
            when sub = 'action' and rtype = 'condensation' then args ->> '$.summary'
            when sub = 'action' and j.source = 'agent' then nullif(concat_ws(chr(10),
                nullif(args ->> '$.thought', ''),
                case when rtype = 'finish' then nullif(args ->> '$.final_thought', '') end), '')
            when sub = 'action' and rtype = 'run' then args ->> '$.command'
            when sub = 'observation' and v0_result_call is null
                and rtype not in ('agent_state_changed', 'recall', 'null') then j.content
        end as text,
        case
            when rtype = 'base_state' then list_sum(list_transform(
                json_extract(j.stats, '$.usage_to_metrics.*.accumulated_token_usage.prompt_tokens'),
                lambda x: try_cast(x as bigint)))::bigint
            when rtype = 'conversation_metadata' then j.prompt_tokens
        end as prompt_total,
        case
            when rtype = 'base_state' then list_sum(list_transform(
                json_extract(j.stats, '$.usage_to_metrics.*.accumulated_token_usage.completion_tokens'),
                lambda x: try_cast(x as bigint)))::bigint
            when rtype = 'conversation_metadata' then j.completion_tokens
        end as output_tokens,
        case
            when rtype = 'base_state' then list_sum(list_transform(
                json_extract(j.stats, '$.usage_to_metrics.*.accumulated_token_usage.cache_write_tokens'),
                lambda x: try_cast(x as bigint)))::bigint
            when rtype = 'conversation_metadata' then j.cache_write_tokens
        end as cache_creation_tokens,
        case
            when rtype = 'base_state' then list_sum(list_transform(
                json_extract(j.stats, '$.usage_to_metrics.*.accumulated_token_usage.cache_read_tokens'),
                lambda x: try_cast(x as bigint)))::bigint
            when rtype = 'conversation_metadata' then j.cache_read_tokens
        end as cache_read_tokens,
        -- one normalized block list (see normalized__blocks.sql)
        case
            when rtype = 'MessageEvent' then list_concat(think_blocks, list_transform(msg_parts,
                lambda x: case
                    when x.type = 'text' then json_object('type', 'text', 'text', x.text)
                    when x.type = 'image' then json_object('type', 'image',
                        'media_type', nullif(regexp_extract(x.image_urls[1], '^data:([^;,]+)', 1), ''),
                        'data_chars', list_sum(list_transform(x.image_urls, lambda u: strlen(u))))
                    else json_object('type', x.type)
                end))
            when rtype = 'ActionEvent' then list_concat(
                think_blocks,
                list_transform(list_filter(thought_parts, lambda x: x.type = 'text'),
                    lambda x: json_object('type', 'text', 'text', x.text)),
                [json_object('type', 'tool_use', 'call_id', coalesce(j.tool_call_id, j.tool_call.id),
                    'tool_name', coalesce(j.tool_name, j.tool_call.name), 'tool_input', call_input)])
            when rtype = 'ObservationEvent' then [json_object('type', 'tool_result',
                'call_id', j.tool_call_id, 'tool_name', j.tool_name, 'output_text', obs_text,
                'is_error', coalesce(try_cast(obs ->> '$.is_error' as boolean), false)
                    or coalesce(try_cast(obs ->> '$.exit_code' as bigint) not in (0, -1), false))]
            when rtype = 'UserRejectObservation' then [json_object('type', 'tool_result',
                'call_id', j.tool_call_id, 'tool_name', j.tool_name,
                'output_text', coalesce(j.rejection_reason, 'rejected'), 'is_error', true)]
            when rtype = 'AgentErrorEvent' then [json_object('type', 'tool_result',
                'call_id', j.tool_call_id, 'tool_name', j.tool_name, 'output_text', j.error,
                'is_error', true)]
            when rtype in ('SystemPromptEvent', 'Condensation', 'CondensationSummaryEvent') then null
            when not v0 then null
            when sub = 'action' and rtype = 'message' then list_concat(
                case when coalesce(args ->> '$.content', j.message) is not null
                    then [json_object('type', 'text', 'text', coalesce(args ->> '$.content', j.message))] end,
                list_transform(v0_images, lambda u: json_object('type', 'image',
                    'media_type', nullif(regexp_extract(u, '^data:([^;,]+)', 1), ''),
                    'data_chars', strlen(u))))
            when sub = 'action' and rtype in ('system', 'condensation', 'condensation_request',
                                              'change_agent_state', 'recall', 'null') then null
            when sub = 'action' then list_concat(
                case when nullif(args ->> '$.thought', '') is not null
                    then [json_object('type', 'text', 'text', args ->> '$.thought')] end,
                [json_object('type', 'tool_use', 'call_id', v0_call,
                    'tool_name', coalesce(j.tool_call_metadata.function_name, rtype),
                    'tool_input', args)])
            when sub = 'observation' and rtype not in ('agent_state_changed', 'recall', 'null')
                and v0_result_call is not null then [json_object('type', 'tool_result',
                'call_id', v0_result_call, 'tool_name', coalesce(j.tool_call_metadata.function_name, rtype),
                'output_text', j.content,
                'is_error', rtype in ('error', 'user_rejected')
                    or coalesce(v0_exit not in (0, -1), false)
                    or coalesce(try_cast(j.extras ->> '$.error' as boolean), false))]
        end as block_list,
        line as raw,
        v0
    from texts
),

classified as (
    select
        * exclude (block_list, prompt_total, v0),
        case
            when prompt_total is null then null
            else greatest(prompt_total - coalesce(cache_read_tokens, 0) - coalesce(cache_creation_tokens, 0), 0)
        end as input_tokens,
        case when len(block_list) > 0 then block_list end as content,
        case
            when record_type in ('base_state', 'conversation_metadata') then 'metadata'
            when record_type = 'MessageEvent' and role = 'user' then 'prompt'
            when record_type = 'MessageEvent' and role = 'system' then 'system'
            when record_type = 'MessageEvent' and role = 'assistant'
                and text is null and len(block_list) > 0 then 'thinking'
            when record_type = 'MessageEvent' and role = 'assistant' then 'response'
            when record_type = 'SystemPromptEvent' then 'system'
            when record_type = 'ActionEvent' then 'tool_use'
            when record_type in ('ObservationEvent', 'UserRejectObservation', 'AgentErrorEvent')
                then 'tool_result'
            when record_type = 'Condensation' then 'compact_boundary'
            when record_type = 'CondensationSummaryEvent' then 'prompt'
            when record_type = 'CondensationRequest' then 'condensation_request'
            when record_type = 'ConversationStateUpdateEvent' then 'state_update'
            when record_type = 'PauseEvent' then 'pause'
            when record_type = 'InterruptEvent' then 'interrupt'
            when record_type = 'TokenEvent' then 'token_ids'
            when record_type = 'HookExecutionEvent' then 'hook_execution'
            when record_type = 'LLMCompletionLogEvent' then 'llm_completion_log'
            when record_type = 'ACPToolCallEvent' then 'acp_tool_call'
            when record_type = 'ConversationErrorEvent' then 'conversation_error'
            when not v0 then 'unknown'
            when record_type in ('change_agent_state', 'agent_state_changed') then 'agent_state'
            when record_type = 'recall' then 'recall'
            when record_type = 'null' then 'noop'
            when record_type = 'condensation_request' then 'condensation_request'
            when record_type = 'condensation' then 'compact_boundary'
            when role = 'user' and subtype = 'action' then 'prompt'
            when role = 'assistant' and record_type = 'message' then 'response'
            when role = 'system' then 'system'
            when role = 'assistant' then 'tool_use'
            when role = 'user' then 'tool_result'
            else 'unknown'
        end as kind,
        case
            when role <> 'user' or role is null then null
            when record_type = 'CondensationSummaryEvent' then 'compact_summary'
            when agent_id is not null then 'inter_agent'
            when text like 'Your last response did not include a function call or a message%'
                or text like 'The task appears incomplete (iteration %' then 'system_reminder'
            when v0 and subtype = 'action' and record_type = 'run' then 'shell_escape'
            when v0 and subtype = 'action' and record_type <> 'message' then 'meta'
        end as harness_kind,
        case
            when timestamp_raw is null then null
            when regexp_matches(timestamp_raw, '(Z|z|[+-]\d\d:?\d\d)$')
                then timezone('UTC', try_cast(timestamp_raw as timestamptz))
            -- naive: the agent's own wall-clock time, read as UTC (see adapters/openhands.py)
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
