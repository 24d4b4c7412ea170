-- grain: one row per content block of a Kimi message record (Kimi Code wire logs, and Kimi
--        CLI context and wire files, whose records SQL shapes their content the same way)
-- input: records_batch (the output of kimi_code__records or kimi_cli__records); its `content`
--        is a list of kosong content parts ({type: text | think | image_url | audio_url |
--        video_url}) and of tool blocks made by the records SQL:
--        {type: tool_use, id, name, input} and {type: tool_result, tool_use_id, output, is_error}
--        (output: a string or a list of content parts)
with exploded_parsed as (
    -- each list parsed once (null unless `content` is a list) and unnested below beside its
    -- subscripts: unnesting range(json_array_length(...)) too parsed it again, and a batch
    -- of long tool output then took several times its bytes
    select *, json_transform(content, '[{
            "type": "VARCHAR", "text": "VARCHAR", "think": "VARCHAR",
            "id": "VARCHAR", "name": "VARCHAR", "input": "JSON",
            "tool_use_id": "VARCHAR", "output": "JSON", "is_error": "BOOLEAN",
            "image_url": {"url": "VARCHAR"}, "audio_url": {"url": "VARCHAR"},
            "video_url": {"url": "VARCHAR"}
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

final as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        block_index,
        case b.type
            when 'think' then 'thinking'
            when 'image_url' then 'image'
            when 'audio_url' then 'audio'
            when 'video_url' then 'video'
            else coalesce(b.type, 'unknown')
        end as block_type,
        case b.type
            when 'text' then b.text
            when 'think' then b.think
        end as text,
        coalesce(b.id, b.tool_use_id) as call_id,
        b.name as tool_name,
        b.input as tool_input,
        case
            when b.type <> 'tool_result' then null
            when json_type(b.output) = 'VARCHAR' then b.output ->> '$'
            when json_type(b.output) = 'ARRAY' then array_to_string(
                list_filter(
                    list_transform(
                        json_transform(b.output, '[{"type": "VARCHAR", "text": "VARCHAR"}]'),
                        lambda x: x.text),
                    lambda t: t is not null),
                chr(10))
            when b.output is not null then b.output::varchar
        end as output_text,
        case when b.type = 'tool_result' then coalesce(b.is_error, false) end as is_error,
        case
            when coalesce(b.image_url.url, b.audio_url.url, b.video_url.url) like 'data:%'
                then regexp_extract(coalesce(b.image_url.url, b.audio_url.url, b.video_url.url), '^data:([^;,]+)', 1)
        end as media_type,
        strlen(coalesce(b.image_url.url, b.audio_url.url, b.video_url.url)) as data_chars,
        month
    from exploded
)

select * from final
