-- grain: one row per tool call (a tool_use block), with its result matched by call id within
-- the same session; calls that never got a result have a null output. tool_kind, path and
-- command normalize the agents' different tool vocabularies for handoffs and notebooks.
with call_times as (
    select file_id, file_epoch, line_no, "timestamp"
    from stg_records
),

-- each call once (its first block), with the time of its record, joined here before the
-- window so that the planner cannot move this join after the results' text joins, where it
-- would hold all that text in its hash table
calls as (
    select blocks.*, call_times."timestamp"
    from stg_blocks as blocks
    left join call_times
        on call_times.file_id = blocks.file_id
        and call_times.file_epoch = blocks.file_epoch
        and call_times.line_no = blocks.line_no
    where blocks.block_type in ('tool_use', 'server_tool_use') and blocks.call_id is not null
    qualify row_number() over (
        partition by blocks.source, blocks.session_id, blocks.call_id order by blocks.file_id, blocks.line_no
    ) = 1
),

-- each call's last result, found on narrow columns so that the results' text, often most
-- of an archive's bytes, is read once and never sorted
last_results as (
    select source, session_id, call_id, file_id, file_epoch, line_no, block_index
    from stg_blocks
    where block_type = 'tool_result' and call_id is not null
    qualify row_number() over (
        partition by source, session_id, call_id order by file_id desc, line_no desc, block_index desc
    ) = 1
),

answered as (
    select
        calls.*,
        last_results.file_id as result_file_id,
        last_results.file_epoch as result_file_epoch,
        last_results.line_no as result_line_no,
        last_results.block_index as result_block_index
    from calls
    left join last_results
        on last_results.source = calls.source
        and last_results.session_id = calls.session_id
        and last_results.call_id = calls.call_id
),

-- the text joins last, by its block's key, from every block: the calls are then the smaller
-- side and hold the join's hash table while the text streams past (a join that held the
-- text instead needed memory for all of it, 682 MB of a 1 GB archive's)
joined as (
    select
        calls.session_id,
        calls.message_id,
        calls.call_id,
        calls.tool_name,
        calls.tool_input as input,
        results.output_text,
        coalesce(results.is_error, false) as is_error,
        calls.source,
        results.message_id as result_message_id,
        calls.result_file_id is not null as has_result,
        calls."timestamp",
        calls.file_id,
        calls.line_no,
        lower(regexp_replace(calls.tool_name, '^.*__', '')) as bare_name
    from answered as calls
    left join stg_blocks as results
        on results.source = calls.source
        and results.session_id = calls.session_id
        and results.file_id = calls.result_file_id
        and results.file_epoch = calls.result_file_epoch
        and results.line_no = calls.result_line_no
        and results.block_index = calls.result_block_index
),

classified as (
    select
        *,
        case
            when bare_name in ('read', 'read_file', 'view', 'cat', 'open_file', 'read_many_files',
                               'notebookread', 'read_files', 'readfile', 'view_file') then 'read'
            when bare_name in ('edit', 'multiedit', 'str_replace', 'replace', 'apply_patch',
                               'notebookedit', 'str_replace_editor', 'edit_file', 'patch', 'replace_in_file',
                               'apply_diff', 'insert_content', 'search_and_replace', 'editor',
                               'strreplacefile', 'replace_file_content', 'edit_existing_file',
                               'single_find_and_replace', 'multi_edit') then 'edit'
            when bare_name in ('write', 'write_file', 'create_file', 'create', 'write_to_file', 'writefile',
                               'create_new_file')
                then 'write'
            when bare_name in ('bash', 'shell', 'exec_command', 'run_shell_command', 'local_shell',
                               'run_terminal_cmd', 'terminal', 'execute_command', 'exec', 'execute',
                               'run_commands', 'execute_bash', 'run_command', 'run_terminal_command') then 'shell'
            when bare_name in ('grep', 'glob', 'search', 'find', 'codebase_search', 'grep_search',
                               'file_search', 'list_directory', 'ls', 'search_file_content', 'search_files',
                               'list_files', 'list_code_definition_names', 'list_dir', 'file_glob_search') then 'search'
            when bare_name in ('todowrite', 'todo_write', 'write_todos', 'todoread') then 'todo'
            when bare_name in ('update_plan', 'exitplanmode', 'plan') then 'plan'
            when bare_name in ('task', 'agent', 'spawn_agent', 'subagent', 'new_task') then 'agent'
            when bare_name in ('webfetch', 'web_fetch', 'websearch', 'web_search', 'google_web_search',
                               'fetchurl', 'searchweb', 'fetch_url_content', 'search_web') then 'web'
            when bare_name in ('text_editor', 'file_editor') then coalesce(
                case input ->> 'command'
                    when 'view' then 'read'
                    when 'write' then 'write'
                    when 'create' then 'write'
                end, 'edit')
            else 'other'
        end as tool_kind,
        coalesce(
            input ->> 'file_path', input ->> 'path', input ->> 'filePath',
            input ->> 'notebook_path', input ->> 'absolute_path', input ->> 'target_file',
            input ->> 'AbsolutePath', input ->> 'TargetFile', input ->> 'filepath'
        ) as path,
        case
            when json_type(input -> 'command') = 'ARRAY'
                then array_to_string(
                    list_transform(json_transform(input -> 'command', '["VARCHAR"]'), lambda c: c), ' ')
            when json_type(input -> 'commands') = 'ARRAY'
                then array_to_string(
                    list_transform(json_transform(input -> 'commands', '["VARCHAR"]'), lambda c: c), ' && ')
            else coalesce(input ->> 'command', input ->> 'cmd', input ->> 'CommandLine')
        end as command
    from joined
),

final as (
    select
        session_id,  -- session the row belongs to; unique within its source (join sessions on source, session_id)
        message_id,  -- id of the assistant message that made the call
        call_id,  -- the call's id, which its result names
        tool_name,  -- tool name as the agent called it (MCP tools keep their server prefix)
        input,  -- arguments of the call, as JSON
        output_text,  -- text of the result; null while the call has no result
        is_error,  -- the result was flagged as an error (false without a result)
        source,  -- agent the row comes from (claude_code, codex, ...; `convarch sources` lists them all)
        tool_kind,  -- the tool's kind across agents' vocabularies: read, edit, write, shell, search, todo, plan, agent, web or other
        path,  -- file the call reads or writes, from its arguments (file_path, path, ...), if any
        case when tool_kind = 'shell' then command end as command,  -- command line of a shell call
        case
            when not has_result then null
            when regexp_matches(output_text, '(?i)exit(?:ed with)? code:?\s*(-?\d+)')
                then try_cast(regexp_extract(output_text, '(?i)exit(?:ed with)? code:?\s*(-?\d+)', 1) as integer)
            when is_error then 1
            else 0
        end as exit_code,  -- exit status: parsed from the result text (exit code N), else 1 for an error result and 0 for another; null without a result
        result_message_id,  -- id of the message that carried the result
        has_result,  -- a result with this call id exists in the session
        "timestamp",  -- when the call was made (UTC)
        file_id,  -- warehouse id of the source file the row was read from; stable across ingests
        line_no  -- line of the record that holds the call
    from classified
)

select * from final
