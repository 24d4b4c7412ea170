-- grain: one row per message Claude Code reloads when it resumes a session (its default branch after the last compact boundary), seq 1..n in the order it is sent back to the model
--
-- The walk is int_chain_paths' 'resume' graph: a compact boundary's null parent ends it, a
-- live preserved segment is relinked behind the summary, snipped entries are gone and
-- orphaned parallel tool calls are recovered. Then the resume-time filters of
-- claude-chain.md §3.8, in order, each over what the previous one kept:
--   1. an assistant entry whose tool_use blocks all lack a tool_result in the list is dropped;
--   2. an assistant entry made only of thinking blocks is dropped, unless another kept
--      assistant entry with the same API message id has a non-thinking block;
--   3. an assistant entry made only of blank text blocks is dropped.
-- (Claude Code then merges adjacent user entries; rows here stay one per stored message.)
-- (listed is not materialized: a copy of the walk's wide rows that DuckDB could not spill,
-- and reading int_chain_paths twice is cheaper: a 200,000-record transcript's chains 4.13 s
-- against 4.31, mean of three paired runs)
with listed as not materialized (
    select *
    from int_chain_paths
    where graph = 'resume'
),

blocks as materialized (
    select
        stg_blocks.file_id,
        stg_blocks.line_no,
        stg_blocks.block_type,
        stg_blocks.call_id,
        stg_blocks.text
    from stg_blocks
    semi join listed
        on listed.file_id = stg_blocks.file_id
        and listed.line_no = stg_blocks.line_no
    where stg_blocks.source = 'claude_code'
),

block_facts as (
    select
        file_id,
        line_no,
        count(*) as block_count,
        count(*) filter (where block_type = 'tool_use') as tool_use_count,
        count(*) filter (where block_type not in ('thinking', 'redacted_thinking'))
            as non_thinking_count,
        count(*) filter (
            where block_type <> 'text' or not regexp_matches(coalesce(text, ''), '^\s*$')
        ) as non_blank_count
    from blocks
    group by file_id, line_no
),

with_blocks as (
    select
        listed.*,
        coalesce(block_facts.block_count, 0) as block_count,
        coalesce(block_facts.tool_use_count, 0) as tool_use_count,
        coalesce(block_facts.non_thinking_count, 0) as non_thinking_count,
        coalesce(block_facts.non_blank_count, 0) as non_blank_count
    from listed
    left join block_facts
        on block_facts.file_id = listed.file_id
        and block_facts.line_no = listed.line_no
),

-- 1. unresolved tool_use
unresolved_calls as (
    select distinct file_id, call_id
    from blocks
    where block_type = 'tool_use'
        and call_id is not null
    except
    select file_id, call_id
    from blocks
    where block_type = 'tool_result'
        and call_id is not null
),

unresolved_counts as (
    select blocks.file_id, blocks.line_no, count(*) as unresolved_count
    from blocks
    join unresolved_calls
        on unresolved_calls.file_id = blocks.file_id
        and unresolved_calls.call_id = blocks.call_id
    where blocks.block_type = 'tool_use'
    group by blocks.file_id, blocks.line_no
),

resolved_kept as (
    select with_blocks.*
    from with_blocks
    left join unresolved_counts
        on unresolved_counts.file_id = with_blocks.file_id
        and unresolved_counts.line_no = with_blocks.line_no
    where not (
        with_blocks.record_type = 'assistant'
        and with_blocks.tool_use_count > 0
        and coalesce(unresolved_counts.unresolved_count, 0) = with_blocks.tool_use_count
    )
),

-- 2. orphan thinking
answered_message_ids as (
    select distinct file_id, api_message_id
    from resolved_kept
    where record_type = 'assistant'
        and non_thinking_count > 0
        and api_message_id is not null
),

thinking_kept as (
    select resolved_kept.*
    from resolved_kept
    left join answered_message_ids
        on answered_message_ids.file_id = resolved_kept.file_id
        and answered_message_ids.api_message_id = resolved_kept.api_message_id
    where not (
        resolved_kept.record_type = 'assistant'
        and resolved_kept.block_count > 0
        and resolved_kept.non_thinking_count = 0
        and answered_message_ids.api_message_id is null
    )
),

-- 3. whitespace-only assistant
whitespace_kept as (
    select *
    from thinking_kept
    where not (record_type = 'assistant' and block_count > 0 and non_blank_count = 0)
),

kept as (
    select
        *,
        is_preserved and record_type = 'assistant' as preserved_assistant
    from whitespace_kept
),

numbered as (
    select
        file_id,
        position,
        row_number() over (partition by file_id order by position) as seq
    from kept
),

final as (
    select
        kept.session_id,  -- session the row belongs to; unique within its source (join sessions on source, session_id)
        numbered.seq,  -- position in the list sent back to the model, from 1
        kept.message_id,  -- the message's uuid in the transcript
        kept.resume_parent_id as parent_id,  -- the parent Claude Code uses on resume, after relinking preserved messages
        records.role,  -- user, assistant or system (null for attachment records)
        kept.kind,  -- what the record is: prompt, tool_result, response, tool_use, thinking, system, compact_boundary, attachment, ...
        kept."timestamp",  -- when the record was written (UTC)
        records.text,  -- plain text of the message (its text blocks joined by newlines)
        kept.record_type,  -- the transcript's own record type: user, assistant, system, attachment
        kept.subtype,  -- the record's subtype, as for system records (compact_boundary, api_error, ...)
        records.harness_kind,  -- for a user record the harness wrote rather than the person: slash_command, command_output, interrupt, compact_summary, system_reminder, meta, ...; null otherwise
        kept.is_sidechain,  -- true for records of a subagent's side chain
        records.is_meta,  -- flagged by the agent as meta (not shown to the person)
        records.is_compact_summary,  -- the summary Claude Code wrote when it compacted the conversation
        kept.is_api_error,  -- an assistant record that reports an API error
        kept.is_recovered,  -- a parallel tool call or its result that the single-parent walk missed, spliced back in after its assistant message
        kept.is_preserved,  -- part of a segment kept live across the last compaction and relinked behind its summary
        records.model,  -- model that produced an assistant message
        kept.api_message_id,  -- the provider's message id; one API response split over several records shares it
        records.request_id,  -- the provider's request id of the API call
        -- Claude Code zeroes the usage of preserved assistant entries when it relinks them
        case when kept.preserved_assistant then 0 else records.input_tokens end as input_tokens,  -- uncached input tokens of the API call (0 on a preserved assistant record, as Claude Code zeroes them)
        case when kept.preserved_assistant then 0 else records.output_tokens end as output_tokens,  -- output tokens of the API call (0 on a preserved assistant record)
        case when kept.preserved_assistant then 0 else records.cache_creation_tokens end
            as cache_creation_tokens,  -- input tokens written to the prompt cache (0 on a preserved assistant record)
        case when kept.preserved_assistant then 0 else records.cache_read_tokens end
            as cache_read_tokens,  -- input tokens read from the prompt cache (0 on a preserved assistant record)
        records.source,  -- always claude_code
        kept.file_id,  -- warehouse id of the transcript file; chains never cross files
        kept.line_no,  -- line of the record in the file (the last line written for its uuid)
        records.source_file  -- path of the transcript file
    from kept
    join numbered
        on numbered.file_id = kept.file_id
        and numbered.position = kept.position
    join stg_records as records
        on records.file_id = kept.file_id
        and records.line_no = kept.line_no
)

select * from final
