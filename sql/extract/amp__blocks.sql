-- grain: one row per content block of an Amp message (text, thinking, tool_use, tool_result,
--        image, summary, ...)
-- input: records_batch (the output of amp__records); its `content` is the message's content
--        array for every message, null otherwise
-- A tool_result block is {toolUseID, run: {status, result | error | reason | progress}}; Amp
-- itself sends status 'error', 'cancelled' and 'rejected-by-user' to the model as errors.
with exploded_parsed as (
    -- each list parsed once (null unless `content` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(content, '[{
            "type": "VARCHAR", "text": "VARCHAR", "thinking": "VARCHAR",
            "id": "VARCHAR", "name": "VARCHAR", "input": "JSON",
            "toolUseID": "VARCHAR", "tool_use_id": "VARCHAR",
            "run": {"status": "VARCHAR", "result": "JSON", "error": "JSON",
                    "reason": "VARCHAR", "progress": "JSON"},
            "content": "JSON", "is_error": "BOOLEAN",
            "summary": {"type": "VARCHAR", "summary": "VARCHAR", "thread": "VARCHAR"},
            "source": {"media_type": "VARCHAR", "mediaType": "VARCHAR", "data": "VARCHAR"}
        }]') as content_list
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
        unnest(content_list) as b,
        generate_subscripts(content_list, 1) - 1 as block_index
    from exploded_parsed
    where content_list is not null
),

-- a JSON value as readable text: a string as is, an object's `output` (else the JSON text)
outputs as (
    select
        *,
        case
            when b.type <> 'tool_result' then null
            when b.run.result is not null then case
                when json_type(b.run.result) = 'VARCHAR' then b.run.result ->> '$'
                when json_type(b.run.result -> '$.output') = 'VARCHAR' then b.run.result ->> '$.output'
                else b.run.result::varchar
            end
            when b.run.error is not null then case
                when json_type(b.run.error) = 'VARCHAR' then b.run.error ->> '$'
                else coalesce(b.run.error ->> '$.message', b.run.error::varchar)
            end
            when b.run.progress is not null then case
                when json_type(b.run.progress) = 'VARCHAR' then b.run.progress ->> '$'
                when json_type(b.run.progress -> '$.output') = 'VARCHAR' then b.run.progress ->> '$.output'
                else b.run.progress::varchar
            end
            when b.run.reason is not null then b.run.reason
            when json_type(b.content) = 'VARCHAR' then b.content ->> '$'
            when json_type(b.content) = 'ARRAY' then array_to_string(
                list_filter(list_transform(
                    json_transform(b.content, '[{"type": "VARCHAR", "text": "VARCHAR"}]'),
                    lambda x: x.text), lambda t: t is not null), chr(10))
        end as output_text
    from exploded
),

final as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        block_index,
        coalesce(b.type, 'unknown') as block_type,
        case b.type
            when 'text' then b.text
            when 'thinking' then b.thinking
            when 'summary' then coalesce(b.summary.summary, b.summary.thread)
        end as text,
        coalesce(b.id, b.toolUseID, b.tool_use_id) as call_id,
        b.name as tool_name,
        b.input as tool_input,
        output_text,
        case
            when b.type <> 'tool_result' then null
            else coalesce(b.is_error, false)
                or coalesce(b.run.status in ('error', 'cancelled', 'rejected-by-user'), false)
        end as is_error,
        coalesce(b.source.media_type, b.source.mediaType) as media_type,
        strlen(b.source.data) as data_chars,
        month
    from outputs
)

select * from final
