-- grain: one row per content block of a Cline, Roo Code or Kilo Code message, plus a second
--        (tool_result) row for a kilo.db tool part that finished, since OpenCode keeps a call
--        and its result in one part
-- input: records_batch (the output of cline_family__records; `content` is the block array)
--
-- Block vocabularies read here, all linked by call id within a session:
-- * Anthropic (Cline, Roo legacy, Cline SDK): text, thinking, redacted_thinking, image,
--   document, tool_use{id,name,input}, tool_result{tool_use_id,content,is_error}; newer Cline
--   names the pairing id `function_id`; the SDK adds file{path,content}.
-- * AI SDK (Roo "RooMessage" v2): reasoning{text}, tool-call{toolCallId,toolName,input},
--   tool-result{toolCallId,output{type,value}} (an `error-*` output type is an error), image,
--   file{mediaType,data}.
-- * OpenCode parts (kilo.db): text, reasoning, tool{callID,tool,state{status,input,output,
--   error}}, file{mime,url}, and bookkeeping parts (step-start, step-finish, patch…).
-- * XML-era calls derived by to_lines: tool_use{id "xml:…", xml} and tool_result markers
--   {tool_use_id, xml, from, to, is_error} whose output is the message's text blocks from..to.
--
-- Memory: tool output is most of a batch's bytes and DuckDB holds a few times each vector's
-- bytes per operator, so the message is parsed once, its list unnested beside its subscripts
-- (a second unnest of range(json_array_length(content)) parsed it again), and the whole
-- message leaves the rows before the window below, which would have held it once per block.
with parsed as (
    select
        source,
        session_id,
        file_id,
        file_epoch,
        line_no,
        message_id,
        month,
        json_transform(content, '[{
            "type": "VARCHAR", "text": "VARCHAR", "thinking": "VARCHAR", "prompt": "VARCHAR",
            "id": "VARCHAR", "name": "VARCHAR", "input": "JSON",
            "tool_use_id": "VARCHAR", "function_id": "VARCHAR",
            "toolCallId": "VARCHAR", "toolName": "VARCHAR",
            "content": "JSON", "output": "JSON", "is_error": "BOOLEAN",
            "callID": "VARCHAR", "tool": "VARCHAR",
            "state": {"status": "VARCHAR", "input": "JSON", "output": "JSON", "error": "JSON"},
            "xml": "BOOLEAN", "from": "BIGINT", "to": "BIGINT",
            "source": {"media_type": "VARCHAR", "data": "VARCHAR", "url": "VARCHAR"},
            "mediaType": "VARCHAR", "mime": "VARCHAR", "media_type": "VARCHAR",
            "data": "VARCHAR", "image": "VARCHAR", "url": "VARCHAR"
        }]') as bl           -- null unless the content is a list
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
        bl,
        unnest(bl) as b,
        generate_subscripts(bl, 1) - 1 as part_index
    from parsed
    where bl is not null
),

-- an OpenCode tool part yields its call and, once it has one, its result
split as (
    select exploded.*, s.sub
    from exploded
    cross join (values (0), (1)) as s(sub)
    where s.sub = 0
        or (b.type = 'tool' and (b.state.status in ('completed', 'error')
            or b.state.output is not null or b.state.error is not null))
),

typed as (
    select
        * exclude (bl),
        case
            when sub = 1 then 'tool_result'
            when b.type is null then 'unknown'
            when b.type in ('tool_use', 'tool-call', 'tool') then 'tool_use'
            when b.type in ('tool_result', 'tool-result') then 'tool_result'
            when b.type in ('thinking', 'reasoning') then 'thinking'
            when b.type = 'file' and coalesce(b.mediaType, b.mime, b.media_type) like 'image/%' then 'image'
            else replace(b.type, '-', '_')
        end as block_type,
        json_type(b.output) as output_type,
        b.output ->> '$.type' as output_kind,
        -- XML era: the text blocks after the "[tool] Result:" header
        case when b.xml then nullif(array_to_string(list_transform(
            list_filter(
                list_slice(bl, b."from" + 1, b."to"),
                lambda x: x.type = 'text' and x.text not like '<environment_details>%'),
            lambda x: x.text), chr(10)), '') end as xml_output
    from split
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
        block_type,
        case
            when sub = 1 then null
            when b.type in ('text', 'reasoning') then b.text
            when b.type = 'thinking' then b.thinking
            when b.type = 'subtask' then b.prompt
        end as text,
        case
            when block_type not in ('tool_use', 'tool_result') then null
            when b.type = 'tool' then coalesce(b.callID, b.id)
            when block_type = 'tool_use' then coalesce(b.function_id, b.toolCallId, b.id)
            else coalesce(b.function_id, b.toolCallId, b.tool_use_id)
        end as call_id,
        case when block_type = 'tool_use' then coalesce(b.name, b.toolName, b.tool) end as tool_name,
        case when block_type = 'tool_use' then coalesce(b.input, b.state.input) end as tool_input,
        case
            when block_type <> 'tool_result' then null
            -- OpenCode: the result half of a tool part
            when sub = 1 and (b.state.status = 'error' or b.state.output is null) then
                case when json_type(b.state.error) = 'VARCHAR' then b.state.error ->> '$'
                    else b.state.error::varchar end
            when sub = 1 and json_type(b.state.output) = 'VARCHAR' then b.state.output ->> '$'
            when sub = 1 then b.state.output::varchar
            when b.xml then xml_output
            -- Anthropic
            when json_type(b.content) = 'VARCHAR' then b.content ->> '$'
            when json_type(b.content) = 'ARRAY' then array_to_string(
                list_filter(
                    list_transform(
                        json_transform(b.content, '[{"type": "VARCHAR", "text": "VARCHAR"}]'),
                        lambda x: x.text),
                    lambda t: t is not null),
                chr(10))
            -- AI SDK
            when output_type = 'VARCHAR' then b.output ->> '$'
            when output_kind in ('text', 'error-text') then b.output ->> '$.value'
            when output_kind = 'content' and json_type(b.output, '$.value') = 'ARRAY' then array_to_string(
                list_filter(
                    list_transform(
                        json_transform(b.output -> '$.value', '[{"type": "VARCHAR", "text": "VARCHAR"}]'),
                        lambda x: x.text),
                    lambda t: t is not null),
                chr(10))
            when output_kind in ('json', 'error-json') then (b.output -> '$.value')::varchar
            else b.output::varchar
        end as output_text,
        case
            when block_type <> 'tool_result' then null
            when sub = 1 then coalesce(b.state.status = 'error', false)
            when output_kind like 'error-%' then true
            else b.is_error
        end as is_error,
        case when block_type in ('image', 'file', 'document', 'attached_document')
            then coalesce(b.source.media_type, b.mediaType, b.mime, b.media_type) end as media_type,
        case when block_type in ('image', 'file', 'document', 'attached_document', 'redacted_thinking') then coalesce(
            strlen(b.source.data),
            strlen(b.data),
            case when b.image like 'data:%' then strlen(b.image) end,
            case when b.url like 'data:%' then strlen(b.url) end) end as data_chars,
        month
    from typed
)

select * from final
