-- grain: one row per physical record that carries a message (user, assistant or system), in
-- every session of every source; message_id is the source's own id (Claude Code's uuid)
with records as (
    select * from stg_records
),

final as (
    select
        session_id,  -- session the row belongs to; unique within its source (join sessions on source, session_id)
        message_id,  -- the source's own id of the message (Claude Code's uuid); null where the source has none
        parent_id,  -- id of the message this one follows, as the source recorded it
        role,  -- user, assistant or system
        kind,  -- what the record is: prompt, tool_result, response, tool_use, thinking, system or compact_boundary
        "timestamp",  -- when the record was written (UTC); null where the source stores no time
        text,  -- plain text of the message (its text blocks joined by newlines); tool inputs and outputs are in tool_calls
        is_sidechain,  -- true for records of a subagent's side conversation
        source_file,  -- path of the agent's file the row was read from
        line_no,  -- line (1-based) of the record in source_file, or its ordinal within a non-JSONL store
        source,  -- agent the row comes from (claude_code, codex, ...; `convarch sources` lists them all)
        harness_kind,  -- for a user record the harness wrote rather than the person: slash_command, command_output, interrupt, compact_summary, system_reminder, meta, ...; null for a typed prompt
        model,  -- model that produced an assistant message
        api_message_id,  -- the provider's message id; one API response split over several records shares it
        request_id,  -- the provider's request id of the API call
        is_meta,  -- flagged by the agent as meta (not shown to the person)
        is_compact_summary,  -- the summary the agent wrote when it compacted the conversation
        input_tokens,  -- uncached input tokens of the API call, as the agent recorded them; repeated on each record of the same api_message_id
        output_tokens,  -- output tokens of the API call; repeated on each record of the same api_message_id
        cache_creation_tokens,  -- input tokens written to the prompt cache; repeated on each record of the same api_message_id
        cache_read_tokens,  -- input tokens read from the prompt cache; repeated on each record of the same api_message_id
        file_id,  -- warehouse id of the source file the row was read from; stable across ingests
        byte_offset  -- byte offset of the record's line in source_file (null for non-JSONL stores)
    from records
    where role is not null
)

select * from final
