-- grain: one row per model call of any source, with its token usage counted once. Claude Code
-- writes one record per content block of an API response, each repeating the usage, and a
-- resumed or forked session copies earlier records into its own file: so a call is keyed by
-- (api_message_id, request_id), the copy in the earliest-started session is kept, and within
-- it the last record wins. Records with tokens but no API message id count one each.
with token_records as (
    select
        source, session_id, api_message_id, request_id, model, "timestamp",
        input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, file_id, file_epoch, line_no,
        min("timestamp") over (partition by file_id) as file_started_at
    from stg_records
    where coalesce(input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens) is not null
),

keyed as (
    select
        *,
        -- a record without an API id is its own call: its line, of its version (a file's lines
        -- kept from earlier versions, file_retained, can share numbers with its current ones)
        coalesce(api_message_id || '|' || coalesce(request_id, ''),
                 file_id || ':' || file_epoch || ':' || line_no) as call_key
    from token_records
),

final as (
    select
        source,  -- agent the call comes from
        session_id,  -- session whose copy of the call is counted (the earliest-started one)
        api_message_id,  -- the provider's message id (null for sources that record tokens per turn)
        request_id,  -- the provider's request id
        model,  -- model that answered
        "timestamp",  -- when the counted record was written (UTC)
        input_tokens,  -- uncached input tokens
        output_tokens,  -- output tokens
        cache_creation_tokens,  -- input tokens written to the prompt cache
        cache_read_tokens,  -- input tokens read from the prompt cache
        file_id,  -- warehouse id of the file the counted record came from
        line_no  -- line of the counted record in that file
    from keyed
    qualify row_number() over (
        partition by source, call_key
        order by file_started_at nulls last, file_id, line_no desc
    ) = 1
)

select * from final
