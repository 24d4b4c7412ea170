-- grain: one row per content block of an OpenCode message or part record: one per part, and
--        a second (tool_result) for a tool part that finished, since OpenCode keeps a call and
--        its result in one part (linked by callID, else by the part's own id)
-- input: records_batch (the output of opencode__records; `content` = [{id, data: Part}])
with exploded_parsed as (
    -- each list parsed once (null unless `content` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(content, '[{"id": "VARCHAR", "data": "JSON"}]') as content_list
    from records_batch
),

exploded as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        month,
        unnest(content_list) as p,
        generate_subscripts(content_list, 1) - 1 as part_index
    from exploded_parsed
    where content_list is not null
),

parts as (
    select
        * exclude (p),
        coalesce(p.id, p.data ->> '$.id') as part_id,
        json_transform(p.data, '{
            "type": "VARCHAR", "text": "VARCHAR", "prompt": "VARCHAR",
            "callID": "VARCHAR", "tool": "VARCHAR",
            "state": {"status": "VARCHAR", "input": "JSON", "output": "JSON", "error": "JSON"},
            "mime": "VARCHAR", "url": "VARCHAR", "data": "VARCHAR"
        }') as d
    from exploded
),

-- a tool part yields its call and, once it has one, its result
split as (
    select parts.*, s.sub
    from parts
    cross join (values (0), (1)) as s(sub)
    where s.sub = 0
        or (d.type = 'tool' and (d.state.status in ('completed', 'error')
            or d.state.output is not null or d.state.error is not null))
),

final as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        row_number() over (partition by file_id, line_no order by part_index, sub) - 1 as block_index,
        case
            when sub = 1 then 'tool_result'
            when d.type is null then 'unknown'
            when d.type = 'tool' then 'tool_use'
            when d.type = 'reasoning' then 'thinking'
            when d.type = 'file' and d.mime like 'image/%' then 'image'
            else replace(d.type, '-', '_')
        end as block_type,
        case
            when sub = 0 and d.type in ('text', 'reasoning') then d.text
            when sub = 0 and d.type = 'subtask' then d.prompt
        end as text,
        case when d.type = 'tool' then coalesce(d.callID, part_id) end as call_id,
        case when d.type = 'tool' and sub = 0 then d.tool end as tool_name,
        case when d.type = 'tool' and sub = 0 then d.state.input end as tool_input,
        case
            when sub = 0 then null
            when d.state.status = 'error' or d.state.output is null then
                case when json_type(d.state.error) = 'VARCHAR' then d.state.error ->> '$'
                    else d.state.error::varchar end
            when json_type(d.state.output) = 'VARCHAR' then d.state.output ->> '$'
            else d.state.output::varchar
        end as output_text,
        case when sub = 1 then coalesce(d.state.status = 'error', false) end as is_error,
        case when d.type in ('file', 'image') then d.mime end as media_type,
        coalesce(strlen(d.data), case when d.url like 'data:%' then strlen(d.url) end) as data_chars,
        month
    from split
)

select * from final
