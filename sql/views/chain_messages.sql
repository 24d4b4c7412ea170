-- grain: one row per message of the full logical history of each Claude Code session's default branch, seq 1..n from the first message
--
-- The default branch (branches.is_default) walked from its leaf back to the root through the
-- file's own parents, continuing through every compact boundary to the message it logically
-- follows, so compacted and snipped messages are kept: compaction_index counts the compact
-- boundaries up to each message, is_snipped marks what a snip removed. Parallel tool calls
-- that the single-parent walk misses are recovered after their assistant message
-- (is_recovered).
-- resume_messages is what Claude Code itself reloads.
-- (compaction_index is counted over the walk's own narrow rows, before the records' text is
-- joined on: the window then sorts a few columns, not every message's text)
with paths as (
    select
        *,
        sum(is_compact_boundary::integer) over (
            partition by file_id
            order by position
            rows between unbounded preceding and current row
        )::bigint as compaction_index
    from int_chain_paths
    where graph = 'full'
),

final as (
    select
        paths.session_id,  -- session the row belongs to; unique within its source (join sessions on source, session_id)
        paths.position as seq,  -- position on the branch, 1 at the first message
        paths.message_id,  -- the message's uuid in the transcript
        paths.parent_id,  -- uuid of the previous message on the branch as written in the file
        records.role,  -- user, assistant or system (null for attachment records)
        paths.kind,  -- what the record is: prompt, tool_result, response, tool_use, thinking, system, compact_boundary, attachment, ...
        paths."timestamp",  -- when the record was written (UTC)
        records.text,  -- plain text of the message (its text blocks joined by newlines)
        paths.record_type,  -- the transcript's own record type: user, assistant, system, attachment
        paths.subtype,  -- the record's subtype, as for system records (compact_boundary, api_error, ...)
        records.harness_kind,  -- for a user record the harness wrote rather than the person: slash_command, command_output, interrupt, compact_summary, system_reminder, meta, ...; null otherwise
        paths.is_sidechain,  -- true for records of a subagent's side chain
        records.is_meta,  -- flagged by the agent as meta (not shown to the person)
        records.is_compact_summary,  -- the summary Claude Code wrote when it compacted the conversation
        paths.is_recovered,  -- a parallel tool call or its result that the single-parent walk missed, spliced back in after its assistant message
        paths.compaction_index,  -- compact boundaries at or before this message (0 before the first compaction)
        paths.is_snipped,  -- a message that a snip removed from what Claude Code reloads
        records.model,  -- model that produced an assistant message
        paths.api_message_id,  -- the provider's message id; one API response split over several records shares it
        records.request_id,  -- the provider's request id of the API call
        records.input_tokens,  -- uncached input tokens of the API call; repeated on each record of the same api_message_id
        records.output_tokens,  -- output tokens of the API call; repeated on each record of the same api_message_id
        records.cache_creation_tokens,  -- input tokens written to the prompt cache; repeated on each record of the same api_message_id
        records.cache_read_tokens,  -- input tokens read from the prompt cache; repeated on each record of the same api_message_id
        records.source,  -- always claude_code
        paths.file_id,  -- warehouse id of the transcript file; chains never cross files
        paths.line_no,  -- line of the record in the file (the last line written for its uuid)
        records.source_file  -- path of the transcript file
    from paths
    join stg_records as records
        on records.file_id = paths.file_id
        and records.line_no = paths.line_no
)

select * from final
