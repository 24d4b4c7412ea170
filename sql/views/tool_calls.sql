-- grain: one row per tool call (a tool_use block), with its result matched by call id within
-- the same session; calls that never got a result have a null output. tool_kind, path and
-- command normalize the agents' different tool vocabularies for handoffs and notebooks.
with blocks as (
    select * from stg_blocks
),

calls as (
    select *
    from blocks
    where block_type in ('tool_use', 'server_tool_use') and call_id is not null
    qualify row_number() over (partition by source, session_id, call_id order by file_id, line_no) = 1
),

results as (
    select *
    from blocks
    where block_type = 'tool_result' and call_id is not null
    qualify row_number() over (
        partition by source, session_id, call_id order by file_id desc, line_no desc
    ) = 1
),

call_times as (
    select file_id, file_epoch, line_no, "timestamp"
    from stg_records
),

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
        results.call_id is not null as has_result,
        call_times."timestamp",
        calls.file_id,
        calls.line_no,
        lower(regexp_replace(calls.tool_name, '^.*__', '')) as bare_name
    from calls
    left join results
        on results.source = calls.source
        and results.session_id = calls.session_id
        and results.call_id = calls.call_id
    left join call_times
        on call_times.file_id = calls.file_id
        and call_times.file_epoch = calls.file_epoch
        and call_times.line_no = calls.line_no
),

classified as (
    select
        *,
        case
            when bare_name in ('read', 'read_file', 'view', 'cat', 'open_file', 'read_many_files',
                               'notebookread') then 'read'
            when bare_name in ('edit', 'multiedit', 'str_replace', 'replace', 'apply_patch',
                               'notebookedit', 'str_replace_editor', 'edit_file', 'patch') then 'edit'
            when bare_name in ('write', 'write_file', 'create_file', 'create') then 'write'
            when bare_name in ('bash', 'shell', 'exec_command', 'run_shell_command', 'local_shell',
                               'run_terminal_cmd', 'terminal', 'execute_command', 'exec') then 'shell'
            when bare_name in ('grep', 'glob', 'search', 'find', 'codebase_search', 'grep_search',
                               'file_search', 'list_directory', 'ls', 'search_file_content') then 'search'
            when bare_name in ('todowrite', 'todo_write', 'write_todos', 'todoread') then 'todo'
            when bare_name in ('update_plan', 'exitplanmode', 'plan') then 'plan'
            when bare_name in ('task', 'agent', 'spawn_agent', 'subagent') then 'agent'
            when bare_name in ('webfetch', 'web_fetch', 'websearch', 'web_search', 'google_web_search')
                then 'web'
            when bare_name = 'text_editor' then coalesce(
                case input ->> 'command'
                    when 'view' then 'read'
                    when 'write' then 'write'
                    when 'create' then 'write'
                end, 'edit')
            else 'other'
        end as tool_kind,
        coalesce(
            input ->> 'file_path', input ->> 'path', input ->> 'filePath',
            input ->> 'notebook_path', input ->> 'absolute_path', input ->> 'target_file'
        ) as path,
        case
            when json_type(input -> 'command') = 'ARRAY'
                then array_to_string(
                    list_transform(json_transform(input -> 'command', '["VARCHAR"]'), lambda c: c), ' ')
            else coalesce(input ->> 'command', input ->> 'cmd')
        end as command
    from joined
),

final as (
    select
        session_id,
        message_id,
        call_id,
        tool_name,
        input,
        output_text,
        is_error,
        source,
        tool_kind,
        path,
        case when tool_kind = 'shell' then command end as command,
        case
            when not has_result then null
            when regexp_matches(output_text, '(?i)exit(?:ed with)? code:?\s*(-?\d+)')
                then try_cast(regexp_extract(output_text, '(?i)exit(?:ed with)? code:?\s*(-?\d+)', 1) as integer)
            when is_error then 1
            else 0
        end as exit_code,
        result_message_id,
        has_result,
        "timestamp",
        file_id,
        line_no
    from classified
)

select * from final
