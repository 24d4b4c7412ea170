-- grain: one row per complete JSONL line of a Codex rollout (every record type kept)
-- input: lines(file_id, line_no, byte_offset, line) and batch_files(file_id, source,
--        file_epoch, source_file, file_stem, session_hint, parent_session_hint, run_id)
--
-- Line shapes: the envelope {timestamp, type, payload} (2025-09 on); the early Rust JSONL
-- without envelope (a {id, timestamp, ...} header, bare ResponseItems, {record_type: state});
-- legacy .json documents arrive here as envelope lines made by the adapter's to_lines.
--
-- Codex writes the conversation twice: as response_item (what the model saw) and as event_msg
-- (what the UI showed). response_item is the message (role set); the event_msg copies
-- (user_message, agent_message, agent_reasoning) keep role null and a bookkeeping kind.
-- A response_item user message is injected context, not typed by the human, when one of its
-- text parts opens with a marker Codex itself treats as contextual (AGENTS.md instructions,
-- <environment_context>, <turn_aborted>, <user_shell_command>, <skill>, hook prompts, ...):
-- harness_kind says which. The check is by text, as Codex's own classifier does, so it does not
-- depend on which lines share a batch.
--
-- Tokens: only event_msg token_count rows carry them (last_token_usage of one model request:
-- input_tokens = input minus cached minus cache writes, cache_read = cached). Codex repeats the
-- previous count at the start of every sampling request; a row counts only when its cumulative
-- total differs from the previous count in the batch, or, for the first count of a batch, when a
-- model output (assistant message, reasoning, tool call) precedes it in the batch. On the
-- madshn__localpush rollouts both rules agree with the cumulative totals exactly.
with parsed as (
    select
        l.file_id,
        l.line_no,
        l.byte_offset,
        l.line,
        -- one parse of the line: the envelope and its payload at once (the payload's shape is
        -- the same as the early format's bare item below; keep the two alike)
        json_transform(l.line, '{
            "timestamp": "VARCHAR", "type": "VARCHAR", "record_type": "VARCHAR",
            "id": "VARCHAR", "payload": {
                "type": "VARCHAR", "role": "VARCHAR", "id": "VARCHAR", "call_id": "VARCHAR",
                "name": "VARCHAR", "namespace": "VARCHAR", "arguments": "JSON", "input": "JSON",
                "output": "JSON", "status": "VARCHAR", "action": "JSON", "success": "BOOLEAN",
                "content": "JSON", "summary": "JSON", "encrypted_content": "VARCHAR",
                "message": "JSON", "text": "VARCHAR", "thread_name": "VARCHAR",
                "revised_prompt": "VARCHAR", "result": "VARCHAR", "tools": "JSON",
                "timestamp": "VARCHAR", "cwd": "VARCHAR", "cli_version": "VARCHAR", "source": "JSON",
                "model": "VARCHAR", "collaboration_mode": {"settings": {"model": "VARCHAR"}},
                "git": {"branch": "VARCHAR"},
                "forked_from_id": "VARCHAR", "parent_thread_id": "VARCHAR",
                "info": {
                    "total_token_usage": {
                        "input_tokens": "BIGINT", "cached_input_tokens": "BIGINT",
                        "cache_write_input_tokens": "BIGINT", "output_tokens": "BIGINT"
                    },
                    "last_token_usage": {
                        "input_tokens": "BIGINT", "cached_input_tokens": "BIGINT",
                        "cache_write_input_tokens": "BIGINT", "output_tokens": "BIGINT"
                    }
                },
                "input_tokens": "BIGINT", "cached_input_tokens": "BIGINT",
                "cache_write_input_tokens": "BIGINT", "output_tokens": "BIGINT"
            }
        }') as e
    from lines as l
),

framed as (
    select
        *,
        e.type in ('session_meta', 'turn_context', 'response_item', 'event_msg', 'compacted')
            or e.payload is not null as is_envelope
    from parsed
),

enveloped as (
    select
        *,
        case
            when is_envelope then coalesce(e.type, 'unknown')
            when e.record_type is not null then e.record_type
            when e.type is null and e.id is not null then 'session_meta'
            when e.type is not null then 'response_item'
            else 'unknown'
        end as record_type
    from framed
),

payloads as (
    select
        *,
        case
            when is_envelope then e.payload
            -- the early format: the line is the bare item, parsed again (such files are rare)
            else json_transform(line, '{
            "type": "VARCHAR", "role": "VARCHAR", "id": "VARCHAR", "call_id": "VARCHAR",
            "name": "VARCHAR", "namespace": "VARCHAR", "arguments": "JSON", "input": "JSON",
            "output": "JSON", "status": "VARCHAR", "action": "JSON", "success": "BOOLEAN",
            "content": "JSON", "summary": "JSON", "encrypted_content": "VARCHAR",
            "message": "JSON", "text": "VARCHAR", "thread_name": "VARCHAR",
            "revised_prompt": "VARCHAR", "result": "VARCHAR", "tools": "JSON",
            "timestamp": "VARCHAR", "cwd": "VARCHAR", "cli_version": "VARCHAR", "source": "JSON",
            "model": "VARCHAR", "collaboration_mode": {"settings": {"model": "VARCHAR"}},
            "git": {"branch": "VARCHAR"},
            "forked_from_id": "VARCHAR", "parent_thread_id": "VARCHAR",
            "info": {
                "total_token_usage": {
                    "input_tokens": "BIGINT", "cached_input_tokens": "BIGINT",
                    "cache_write_input_tokens": "BIGINT", "output_tokens": "BIGINT"
                },
                "last_token_usage": {
                    "input_tokens": "BIGINT", "cached_input_tokens": "BIGINT",
                    "cache_write_input_tokens": "BIGINT", "output_tokens": "BIGINT"
                }
            },
            "input_tokens": "BIGINT", "cached_input_tokens": "BIGINT",
            "cache_write_input_tokens": "BIGINT", "output_tokens": "BIGINT"
        }')
        end as j
    from enveloped
),

-- j's JSON-typed fields (content, summary, message, arguments, input, output) are minified
-- JSON text made by json_transform, so the first character tells their type without parsing
-- them again: '"' a string, '[' an array, '{' an object (a JSON null is SQL NULL)
shaped as (
    select
        *,
        case when record_type in ('response_item', 'event_msg') then j.type end as ptype,
        case when starts_with(j.content, '[')
            then json_transform(j.content, '[{"type": "VARCHAR", "text": "VARCHAR", "image_url": "VARCHAR"}]')
        end as parts,
        case when starts_with(j.summary, '[')
            then json_transform(j.summary, '[{"type": "VARCHAR", "text": "VARCHAR"}]')
        end as summary_parts,
        case when starts_with(j.message, '"') then j.message ->> '$' end as message_text,
        -- a tool's arguments or input: parsed when it is JSON text, else kept as a JSON string
        case
            when starts_with(coalesce(j.arguments, j.input), '"') then
                case
                    when json_valid(coalesce(j.arguments, j.input) ->> '$')
                        then json(coalesce(j.arguments, j.input) ->> '$')
                    else coalesce(j.arguments, j.input)
                end
            else coalesce(j.arguments, j.input)
        end as tool_args,
        -- a tool output: text, an array of content items, or (before 2026) a JSON string
        -- {"output": ..., "metadata": {"exit_code": ...}}
        case when starts_with(j.output, '"') then j.output ->> '$' end as output_string,
        case when starts_with(j.output, '[')
            then json_transform(j.output, '[{"type": "VARCHAR", "text": "VARCHAR"}]')
        end as output_parts
    from payloads
),

texts as (
    select
        *,
        case
            when starts_with(j.content, '"') then [j.content ->> '$']
            else list_filter(
                list_transform(parts, lambda x: case
                    when x.type in ('input_text', 'output_text', 'text', 'reasoning_text') then x.text end),
                lambda t: t is not null)
        end as text_parts,
        case
            when output_string is null then null
            -- only text that opens like an object is parsed; valid JSON that opens so is one
            when regexp_matches(output_string, '^\s*\{') and json_valid(output_string)
                then output_string::JSON
        end as output_wrapper
    from shaped
),

roles as (
    select
        *,
        case
            when record_type = 'compacted' then 'system'
            when record_type <> 'response_item' then null
            when ptype = 'message' then case j.role
                when 'user' then 'user'
                when 'assistant' then 'assistant'
                when 'developer' then 'system'
                when 'system' then 'system'
            end
            when ptype in ('reasoning', 'function_call', 'custom_tool_call', 'local_shell_call',
                           'web_search_call', 'image_generation_call', 'tool_search_call')
                then 'assistant'
            when ptype in ('function_call_output', 'custom_tool_call_output', 'tool_search_output',
                           'agent_message')
                then 'user'
        end as role,
        case
            when ptype in ('function_call', 'custom_tool_call', 'tool_search_call',
                           'function_call_output', 'custom_tool_call_output', 'tool_search_output')
                then j.call_id
            when ptype in ('local_shell_call', 'web_search_call', 'image_generation_call')
                then coalesce(j.call_id, j.id, ptype || '@' || line_no)
        end as call_id,
        case
            when ptype = 'function_call' and coalesce(j.namespace, '') <> ''
                then j.namespace || '__' || j.name
            when ptype in ('function_call', 'custom_tool_call') then j.name
            when ptype = 'local_shell_call' then 'local_shell'
            when ptype = 'web_search_call' then 'web_search'
            when ptype = 'image_generation_call' then 'image_generation'
            when ptype = 'tool_search_call' then 'tool_search'
        end as tool_name,
        case
            when output_wrapper is not null and json_exists(output_wrapper, '$.output')
                then output_wrapper ->> '$.output'
            when output_string is not null then output_string
            when output_parts is not null then array_to_string(
                list_filter(list_transform(output_parts, lambda x: x.text), lambda t: t is not null),
                chr(10))
            when starts_with(j.output, '{')
                then coalesce(j.output ->> '$.text', j.output ->> '$.content', j.output::VARCHAR)
            when ptype = 'tool_search_output' then j.tools::VARCHAR
            else j.output ->> '$'
        end as output_text,
        case
            when j.success is not null then not j.success
            when output_wrapper is not null
                and try_cast(output_wrapper ->> '$.metadata.exit_code' as bigint) is not null
                then try_cast(output_wrapper ->> '$.metadata.exit_code' as bigint) <> 0
        end as output_is_error
    from texts
),

blocks_of as (
    select
        *,
        case
            when ptype in ('message', 'agent_message') and parts is not null then list_transform(parts,
                lambda x: {
                    'type': case
                        when x.type in ('input_text', 'output_text', 'text') then 'text'
                        when x.type in ('input_image', 'output_image', 'image') then 'image'
                        else coalesce(x.type, 'unknown')
                    end,
                    'text': x.text, 'call_id': null::VARCHAR, 'name': null::VARCHAR,
                    'input': null::JSON, 'output': null::VARCHAR, 'is_error': null::BOOLEAN,
                    'media_type': case when x.image_url like 'data:%;%'
                        then regexp_extract(x.image_url, '^data:([^;,]+)', 1) end,
                    'data_chars': strlen(x.image_url)
                })
            when ptype in ('message', 'agent_message') and text_parts is not null then list_transform(text_parts,
                lambda t: {
                    'type': 'text', 'text': t, 'call_id': null::VARCHAR, 'name': null::VARCHAR,
                    'input': null::JSON, 'output': null::VARCHAR, 'is_error': null::BOOLEAN,
                    'media_type': null::VARCHAR, 'data_chars': null::BIGINT
                })
            when ptype = 'reasoning'
                and len(list_filter(summary_parts, lambda x: x.text is not null)) > 0
                then list_transform(list_filter(summary_parts, lambda x: x.text is not null),
                lambda x: {
                    'type': 'thinking', 'text': x.text, 'call_id': null::VARCHAR, 'name': null::VARCHAR,
                    'input': null::JSON, 'output': null::VARCHAR, 'is_error': null::BOOLEAN,
                    'media_type': null::VARCHAR, 'data_chars': null::BIGINT
                })
            when ptype = 'reasoning' and starts_with(j.summary, '"') then [{
                    'type': 'thinking', 'text': j.summary ->> '$', 'call_id': null::VARCHAR,
                    'name': null::VARCHAR, 'input': null::JSON, 'output': null::VARCHAR,
                    'is_error': null::BOOLEAN, 'media_type': null::VARCHAR, 'data_chars': null::BIGINT
                }]
            when ptype = 'reasoning' and len(text_parts) > 0 then list_transform(text_parts,
                lambda t: {
                    'type': 'thinking', 'text': t, 'call_id': null::VARCHAR, 'name': null::VARCHAR,
                    'input': null::JSON, 'output': null::VARCHAR, 'is_error': null::BOOLEAN,
                    'media_type': null::VARCHAR, 'data_chars': null::BIGINT
                })
            when ptype = 'reasoning' and j.encrypted_content is not null then [{
                    'type': 'redacted_thinking', 'text': null::VARCHAR, 'call_id': null::VARCHAR,
                    'name': null::VARCHAR, 'input': null::JSON, 'output': null::VARCHAR,
                    'is_error': null::BOOLEAN, 'media_type': null::VARCHAR,
                    'data_chars': strlen(j.encrypted_content)
                }]
            when ptype in ('function_call', 'custom_tool_call', 'local_shell_call', 'tool_search_call') then [{
                    'type': 'tool_use', 'text': null::VARCHAR, 'call_id': call_id, 'name': tool_name,
                    'input': case when ptype = 'local_shell_call' then j.action else tool_args end,
                    'output': null::VARCHAR, 'is_error': null::BOOLEAN,
                    'media_type': null::VARCHAR, 'data_chars': null::BIGINT
                }]
            -- calls whose result is in the same record: a tool_use and a tool_result block
            when ptype in ('web_search_call', 'image_generation_call') then [{
                    'type': 'tool_use', 'text': null::VARCHAR, 'call_id': call_id, 'name': tool_name,
                    'input': case when ptype = 'web_search_call' then j.action
                        else to_json({'revised_prompt': j.revised_prompt}) end,
                    'output': null::VARCHAR, 'is_error': null::BOOLEAN,
                    'media_type': null::VARCHAR, 'data_chars': null::BIGINT
                }, {
                    'type': 'tool_result', 'text': null::VARCHAR, 'call_id': call_id, 'name': null::VARCHAR,
                    'input': null::JSON,
                    'output': case when ptype = 'image_generation_call'
                        then coalesce(j.revised_prompt, j.status) else j.status end,
                    'is_error': j.status = 'failed',
                    'media_type': null::VARCHAR, 'data_chars': strlen(j.result)
                }]
            when ptype in ('function_call_output', 'custom_tool_call_output', 'tool_search_output') then [{
                    'type': 'tool_result', 'text': null::VARCHAR, 'call_id': call_id, 'name': null::VARCHAR,
                    'input': null::JSON, 'output': output_text, 'is_error': output_is_error,
                    'media_type': null::VARCHAR, 'data_chars': null::BIGINT
                }]
            when record_type = 'compacted' and coalesce(message_text, '') <> '' then [{
                    'type': 'text', 'text': message_text, 'call_id': null::VARCHAR, 'name': null::VARCHAR,
                    'input': null::JSON, 'output': null::VARCHAR, 'is_error': null::BOOLEAN,
                    'media_type': null::VARCHAR, 'data_chars': null::BIGINT
                }]
        end as blocks
    from roles
),

typed as (
    select
        f.source,
        coalesce(f.session_hint, f.file_stem) as session_id,
        b.file_id,
        f.file_epoch,
        f.source_file,
        b.line_no,
        b.byte_offset,
        f.run_id as ingest_run_id,
        b.record_type,
        b.ptype,
        case when b.record_type = 'response_item' then b.j.id end as message_id,
        b.role,
        -- the thread's own session_meta is dated by its creation time, the rest by when written
        case
            when b.record_type = 'session_meta' and b.j.id = coalesce(f.session_hint, f.file_stem)
                and try_cast(b.j.timestamp as timestamptz) is not null then b.j.timestamp
            else b.e.timestamp
        end as timestamp_raw,
        -- only the payload fields read after this point, so the wide payload (its content and
        -- output text) is not carried through the running values below
        struct_pack(cwd := b.j.cwd, git := b.j.git, cli_version := b.j.cli_version,
                    summary := b.j.summary, text := b.j.text, thread_name := b.j.thread_name) as j,
        b.text_parts,
        b.summary_parts,
        b.message_text,
        b.blocks,
        b.line,
        f.parent_session_hint,
        -- the thread this one was spawned or forked from, read from its own session_meta
        case
            when b.record_type = 'session_meta'
                and (b.j.id = coalesce(f.session_hint, f.file_stem)
                     or not regexp_matches(coalesce(f.session_hint, f.file_stem),
                                           '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'))
                then coalesce(
                    nullif(b.j.parent_thread_id, ''),
                    nullif(b.j.source -> 'subagent' -> 'thread_spawn' ->> 'parent_thread_id', ''),
                    nullif(b.j.forked_from_id, ''))
        end as meta_parent,
        coalesce(b.j.model, b.j.collaboration_mode.settings.model) as model_here,
        coalesce(b.j.info.last_token_usage.input_tokens, b.j.input_tokens) as u_input,
        coalesce(b.j.info.last_token_usage.cached_input_tokens, b.j.cached_input_tokens) as u_cached,
        coalesce(b.j.info.last_token_usage.cache_write_input_tokens, b.j.cache_write_input_tokens) as u_write,
        coalesce(b.j.info.last_token_usage.output_tokens, b.j.output_tokens) as u_output,
        coalesce(
            b.j.info.total_token_usage::VARCHAR,
            case when b.j.input_tokens is not null or b.j.output_tokens is not null then
                [b.j.input_tokens, b.j.cached_input_tokens, b.j.cache_write_input_tokens,
                 b.j.output_tokens]::VARCHAR
            end) as usage_sig
    from blocks_of as b
    join batch_files as f on f.file_id = b.file_id
),

flagged as (
    select
        *,
        record_type = 'event_msg' and ptype = 'token_count'
            and (u_input is not null or u_output is not null) as is_usage,
        record_type = 'response_item' and role = 'assistant' as is_output
    from typed
),

-- the running values over each file's earlier lines, computed over the few narrow columns they
-- need: a window over the wide rows would sort every line's text along with them
running as (
    select
        file_id,
        line_no,
        max(case when is_usage then line_no end) over w as prev_usage_line,
        last_value(case when is_usage then usage_sig end ignore nulls) over w as prev_usage_sig,
        max(case when is_output then line_no end) over w as prev_output_line,
        last_value(case when record_type = 'turn_context' then model_here end ignore nulls) over (
            partition by file_id order by line_no
            rows between unbounded preceding and current row
        ) as turn_model
    from flagged
    window w as (partition by file_id order by line_no rows between unbounded preceding and 1 preceding)
),

windowed as (
    select f.*, r.prev_usage_line, r.prev_usage_sig, r.prev_output_line, r.turn_model
    from flagged as f
    join running as r using (file_id, line_no)
),

classified as (
    select
        source,
        session_id,
        coalesce(parent_session_hint, meta_parent) as parent_session_id,
        file_id,
        file_epoch,
        source_file,
        line_no,
        byte_offset,
        ingest_run_id,
        record_type,
        ptype as subtype,
        message_id,
        null::VARCHAR as parent_id,
        null::VARCHAR as logical_parent_id,
        role,
        timestamp_raw,
        timezone('UTC', try_cast(timestamp_raw as timestamptz)) as "timestamp",
        false as is_sidechain,
        false as is_meta,
        record_type = 'compacted' as is_compact,
        null::VARCHAR as agent_id,
        null::VARCHAR as request_id,
        null::VARCHAR as api_message_id,
        case
            when record_type in ('turn_context', 'session_meta') then model_here
            when role = 'assistant' or (record_type = 'event_msg' and ptype = 'token_count')
                then turn_model
        end as model,
        case when record_type in ('session_meta', 'turn_context') then j.cwd end as cwd,
        case when record_type = 'session_meta' then j.git.branch end as git_branch,
        case when record_type = 'session_meta' then j.cli_version end as version,
        case
            when record_type = 'compacted' then nullif(message_text, '')
            when record_type = 'response_item' and ptype in ('message', 'agent_message')
                then nullif(array_to_string(text_parts, chr(10)), '')
            when record_type = 'response_item' and ptype = 'reasoning' then coalesce(
                nullif(array_to_string(list_filter(
                    list_transform(summary_parts, lambda x: x.text), lambda t: t is not null), chr(10)), ''),
                case when starts_with(j.summary, '"') then j.summary ->> '$' end,
                nullif(array_to_string(text_parts, chr(10)), ''))
            when record_type = 'event_msg' and ptype in ('user_message', 'agent_message') then message_text
            when record_type = 'event_msg' and ptype in ('agent_reasoning', 'agent_reasoning_raw_content')
                then j.text
            when record_type = 'event_msg' and ptype = 'thread_name_updated' then j.thread_name
        end as text,
        is_usage and case
            when prev_usage_line is null then prev_output_line is not null
            else usage_sig is distinct from prev_usage_sig
        end as counts_tokens,
        u_input,
        u_cached,
        u_write,
        u_output,
        blocks as content,
        line as raw,
        text_parts
    from windowed
),

kinds as (
    select
        * exclude (counts_tokens, u_input, u_cached, u_write, u_output, text_parts),
        case when counts_tokens
            then greatest(coalesce(u_input, 0) - coalesce(u_cached, 0) - coalesce(u_write, 0), 0)
        end as input_tokens,
        case when counts_tokens then u_output end as output_tokens,
        case when counts_tokens then u_write end as cache_creation_tokens,
        case when counts_tokens then u_cached end as cache_read_tokens,
        case
            when record_type = 'session_meta' then 'metadata'
            when record_type = 'turn_context' then 'turn_context'
            when record_type = 'compacted' then 'compact_boundary'
            when record_type = 'state' then 'state'
            when record_type in ('world_state', 'inter_agent_communication',
                                 'inter_agent_communication_metadata') then record_type
            when record_type = 'response_item' then case
                when subtype = 'message' and role = 'user' then 'prompt'
                when subtype = 'message' and role = 'assistant' then 'response'
                when subtype = 'message' and role = 'system' then 'system'
                when subtype = 'agent_message' then 'prompt'
                when subtype = 'reasoning' then 'thinking'
                when role = 'assistant' then 'tool_use'
                when role = 'user' then 'tool_result'
                when subtype in ('compaction', 'compaction_summary', 'context_compaction') then 'compaction'
                when subtype = 'ghost_snapshot' then 'ghost_snapshot'
                else 'unknown'
            end
            when record_type = 'event_msg' then case
                when subtype = 'thread_name_updated' then 'metadata'
                when regexp_matches(coalesce(subtype, ''), '^[a-z][a-z0-9_]*$')
                    and subtype not in ('prompt', 'tool_result', 'response', 'tool_use', 'thinking',
                                        'system', 'compact_boundary', 'metadata', 'attachment',
                                        'progress', 'unknown') then subtype
                else 'event'
            end
            else 'unknown'
        end as kind,
        case
            when role <> 'user' or role is null then null
            when subtype = 'agent_message' then 'inter_agent'
            else list_filter(list_transform(
                list_transform(text_parts, lambda t: lower(left(regexp_replace(t, '^\s+', ''), 80))),
                lambda lt: case
                    when starts_with(lt, '# agents.md instructions for')
                        or starts_with(lt, '<user_instructions>')
                        or starts_with(lt, '<agents_instructions>') then 'instructions'
                    when starts_with(lt, '<environment_context>')
                        or starts_with(lt, '<multiagent_context>') then 'environment_context'
                    when starts_with(lt, '<turn_aborted>') then 'interrupt'
                    when starts_with(lt, '<user_shell_command>') then 'command_output'
                    when starts_with(lt, '<skill') then 'skill'
                    when starts_with(lt, '<subagent_notification>') then 'subagent_notification'
                    when starts_with(lt, '<goal_context>') then 'goal_context'
                    when starts_with(lt, '<hook_prompt') then 'hook_prompt'
                    when starts_with(lt, 'another language model started to solve this problem')
                        then 'compact_summary'
                    when starts_with(lt, 'warning: the maximum number of unified exec processes')
                        or starts_with(lt, 'warning: your account was flagged')
                        or starts_with(lt, 'warning: apply_patch was requested via ')
                        then 'system_reminder'
                end),
                lambda k: k is not null)[1]
        end as harness_kind
    from classified
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
        is_compact or coalesce(harness_kind = 'compact_summary', false) as is_compact_summary,
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
    from kinds
)

-- context lines from before the batch (codex__context.sql) come with negative line numbers:
-- their values carry forward, the lines themselves were loaded before
select * from final
where line_no > 0
