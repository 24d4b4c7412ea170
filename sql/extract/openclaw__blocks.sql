-- grain: one row per content block of an OpenClaw message: text, thinking, image, tool_use
--        (an assistant toolCall), tool_result (a toolResult message), shell_command (a command
--        the person ran with `!`, output included), and the summary of a compaction or
--        branch summary as one text block
-- input: records_batch (the output of openclaw__records); its `content` is {role, parts,
--        toolCallId, toolName, isError, command, output, exitCode, cancelled, summary}
with records as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        content ->> '$.role' as role,
        json_extract(content, '$.parts') as parts,
        content ->> '$.toolCallId' as tool_call_id,
        content ->> '$.toolName' as tool_name,
        try_cast(content ->> '$.isError' as boolean) as is_error,
        content ->> '$.command' as command,
        content ->> '$.output' as output,
        try_cast(content ->> '$.exitCode' as bigint) as exit_code,
        try_cast(content ->> '$.cancelled' as boolean) as cancelled,
        content ->> '$.summary' as summary
    from records_batch
    where content is not null
),

part_rows_parsed as (
    -- each list parsed once (null unless `parts` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(parts, '[{
            "type": "VARCHAR", "text": "VARCHAR", "thinking": "VARCHAR", "id": "VARCHAR",
            "name": "VARCHAR", "arguments": "JSON", "data": "VARCHAR", "mimeType": "VARCHAR"
        }]') as parts_list
    from records
),

part_rows as (
    select
        * exclude (parts_list),
        unnest(parts_list) as p,
        generate_subscripts(parts_list, 1) - 1 as i
    from part_rows_parsed
    where parts_list is not null and role not in ('bashExecution')
),

part_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        1 as grp, i as ord,
        case
            when p.type = 'toolCall' then 'tool_use'
            else coalesce(p.type, 'unknown')
        end as block_type,
        case when p.type = 'thinking' then p.thinking else p.text end as text,
        case when p.type = 'toolCall'
            then coalesce(p.id, coalesce(message_id, line_no::varchar) || ':' || i::varchar)
        end as call_id,
        case when p.type = 'toolCall' then p.name end as tool_name,
        case when p.type = 'toolCall' then p.arguments end as tool_input,
        null::varchar as output_text,
        null::boolean as is_error,
        p.mimeType as media_type,
        strlen(p.data) as data_chars
    from part_rows
    -- a tool result's text parts are its output, carried by the tool_result block below
    where role <> 'toolResult' or p.type not in ('text')
),

string_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        1 as grp, 0 as ord,
        'text' as block_type,
        parts ->> '$' as text,
        null::varchar as call_id, null::varchar as tool_name, null::json as tool_input,
        null::varchar as output_text, null::boolean as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from records
    where json_type(parts) = 'VARCHAR' and role not in ('toolResult', 'bashExecution')
),

result_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        0 as grp, 0 as ord,
        'tool_result' as block_type,
        null::varchar as text,
        tool_call_id as call_id,
        tool_name,
        null::json as tool_input,
        case
            when json_type(parts) = 'VARCHAR' then parts ->> '$'
            when json_type(parts) = 'ARRAY' then array_to_string(list_filter(
                list_transform(json_transform(parts, '[{"type": "VARCHAR", "text": "VARCHAR"}]'),
                    lambda x: case when x.type = 'text' then x.text end),
                lambda t: t is not null), chr(10))
        end as output_text,
        coalesce(is_error, false) as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from records
    where role = 'toolResult'
),

shell_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        0 as grp, 0 as ord,
        'shell_command' as block_type,
        command as text,
        null::varchar as call_id, null::varchar as tool_name, null::json as tool_input,
        output as output_text,
        coalesce(exit_code <> 0, false) or coalesce(cancelled, false) as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from records
    where role = 'bashExecution'
),

summary_blocks as (
    select
        source, session_id, file_id, file_epoch, line_no, message_id, month,
        2 as grp, 0 as ord,
        'text' as block_type,
        summary as text,
        null::varchar as call_id, null::varchar as tool_name, null::json as tool_input,
        null::varchar as output_text, null::boolean as is_error,
        null::varchar as media_type, null::bigint as data_chars
    from records
    where summary is not null
        and (role in ('compaction', 'branch_summary') or parts is null or json_type(parts) = 'NULL')
),

all_blocks as (
    select * from part_blocks
    union all by name
    select * from string_blocks
    union all by name
    select * from result_blocks
    union all by name
    select * from shell_blocks
    union all by name
    select * from summary_blocks
),

final as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        (row_number() over (partition by file_id, line_no order by grp, ord) - 1)::bigint as block_index,
        block_type,
        text,
        call_id,
        tool_name,
        tool_input,
        output_text,
        is_error,
        media_type,
        data_chars,
        month
    from all_blocks
)

select * from final
