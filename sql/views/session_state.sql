-- grain: one row per Claude Code session file that has a conversation: how Claude Code would find it on resume (interrupted or not), from the last entry of resume_messages
--
-- claude-chain.md §3.8 step 4. The last entry, skipping system entries and API-error
-- assistants, decides:
--   assistant -> none (streaming never stores a stop reason);
--   user that is meta or the compact summary -> none;
--   user tool result (first block a tool_result, or a toolUseResult) -> interrupted_turn,
--     unless it answers SendUserMessage / Brief / SendUserFile, which end a turn -> none;
--   any other user -> interrupted_prompt;  attachment -> interrupted_turn.
-- Claude Code then appends "Continue from where you left off." for an interrupted turn, and a
-- no-response assistant sentinel whenever the last non-system entry is a user entry; both are
-- reported as flags and never written anywhere.
with listed as materialized (
    select * from resume_messages
),

last_relevant as (
    select
        file_id,
        max(seq) as seq
    from listed
    where record_type not in ('system', 'progress')
        and not (record_type = 'assistant' and is_api_error)
    group by file_id
),

last_non_system as (
    select
        file_id,
        arg_max(record_type, seq) as record_type
    from listed
    where record_type not in ('system', 'progress')
    group by file_id
),

last_entries as (
    select
        listed.*,
        -- Boolean(toolUseResult) in Claude Code: any object or array, a non-empty string, true
        -- or a non-zero number
        case json_type(records.chain_raw -> '$.toolUseResult')
            when 'OBJECT' then true
            when 'ARRAY' then true
            when 'VARCHAR' then (records.chain_raw ->> '$.toolUseResult') <> ''
            when 'BOOLEAN' then (records.chain_raw ->> '$.toolUseResult') = 'true'
            when 'UBIGINT' then (records.chain_raw ->> '$.toolUseResult') <> '0'
            when 'BIGINT' then (records.chain_raw ->> '$.toolUseResult') <> '0'
            when 'DOUBLE' then try_cast(records.chain_raw ->> '$.toolUseResult' as double) <> 0
            else false
        end as has_tool_use_result
    from listed
    join last_relevant
        on last_relevant.file_id = listed.file_id
        and last_relevant.seq = listed.seq
    join stg_records as records
        on records.file_id = listed.file_id
        and records.line_no = listed.line_no
),

first_blocks as (
    select
        stg_blocks.file_id,
        stg_blocks.line_no,
        stg_blocks.block_type,
        stg_blocks.call_id
    from stg_blocks
    semi join last_entries
        on last_entries.file_id = stg_blocks.file_id
        and last_entries.line_no = stg_blocks.line_no
    where stg_blocks.source = 'claude_code'
        and stg_blocks.block_index = 0
),

-- the tool a trailing tool result answers, looked up among the earlier listed assistants
answered_tools as (
    select
        first_blocks.file_id,
        arg_max(calls.tool_name, listed.seq) as tool_name
    from first_blocks
    join stg_blocks as calls
        on calls.file_id = first_blocks.file_id
        and calls.call_id = first_blocks.call_id
        and calls.block_type = 'tool_use'
    join listed
        on listed.file_id = calls.file_id
        and listed.line_no = calls.line_no
        and listed.record_type = 'assistant'
    where first_blocks.block_type = 'tool_result'
    group by first_blocks.file_id
),

classified as (
    select
        sessions.session_id,
        sessions.file_id,
        last_entries.message_id as last_message_id,
        last_entries.record_type as last_record_type,
        case
            when last_entries.record_type is null then 'none'
            when last_entries.record_type = 'assistant' then 'none'
            when last_entries.record_type = 'user' then
                case
                    when last_entries.is_meta or last_entries.is_compact_summary then 'none'
                    when coalesce(first_blocks.block_type = 'tool_result', false)
                        or last_entries.has_tool_use_result then
                        case
                            when answered_tools.tool_name
                                in ('SendUserMessage', 'Brief', 'SendUserFile') then 'none'
                            else 'interrupted_turn'
                        end
                    else 'interrupted_prompt'
                end
            when last_entries.record_type = 'attachment' then 'interrupted_turn'
            else 'none'
        end as interruption,
        last_non_system.record_type as last_non_system_type
    from (
        select file_id, any_value(session_id) as session_id
        from listed
        group by file_id
    ) as sessions
    left join last_entries
        on last_entries.file_id = sessions.file_id
    left join first_blocks
        on first_blocks.file_id = last_entries.file_id
        and first_blocks.line_no = last_entries.line_no
    left join answered_tools
        on answered_tools.file_id = sessions.file_id
    left join last_non_system
        on last_non_system.file_id = sessions.file_id
),

final as (
    select
        session_id,  -- session the row belongs to; unique within its source (join sessions on source, session_id)
        interruption,  -- how Claude Code finds the session on resume: none, interrupted_prompt or interrupted_turn
        interruption = 'interrupted_turn' as appends_continue_prompt,  -- on resume Claude Code adds "Continue from where you left off."
        interruption = 'interrupted_turn' or last_non_system_type = 'user'
            as appends_no_response_sentinel,  -- on resume Claude Code adds a no-response assistant placeholder
        last_message_id,  -- uuid of the last entry that decided the state
        last_record_type,  -- record type of that entry
        file_id  -- warehouse id of the transcript file; chains never cross files
    from classified
)

select * from final
