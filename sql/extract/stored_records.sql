-- grain: one row per record of records_batch, as stored in the lake
-- The parsed `content` is not stored (raw keeps every byte). Two narrow copies of raw JSON are
-- kept beside it, so readers that need a few lines' JSON do not read every record's:
--   metadata_raw  a metadata record's (session titles and tags, sql/extract/session_parts.sql);
--   chain_raw     a Claude Code line's where it holds what the chain rebuild reads from the
--                 verbatim line (sql/views/int_chain_nodes.sql, branches.sql,
--                 session_state.sql): a compact boundary (its preservedSegment), a snip (its
--                 removedUuids), an assistant API error, a summary (its leafUuid), and a user
--                 line with a toolUseResult whose first block is not a tool result (the only
--                 case in which the rebuild reads it). Other lines: null.
-- input: records_batch, blocks_batch
with first_tool_results as (
    select distinct file_id, line_no
    from blocks_batch
    where block_index = 0
        and block_type = 'tool_result'
),

final as (
    select
        records.* exclude (content),
        case when records.kind = 'metadata' then records.raw end as metadata_raw,
        case
            when records.source <> 'claude_code' then null
            when records.kind = 'compact_boundary'
                or records.record_type = 'summary'
                or contains(records.raw, '"snipMetadata"')
                or (records.record_type = 'assistant' and contains(records.raw, '"isApiErrorMessage"'))
                or (records.record_type = 'user'
                    and first_tool_results.line_no is null
                    and contains(records.raw, '"toolUseResult"'))
                then records.raw
        end as chain_raw
    from records_batch as records
    left join first_tool_results
        on first_tool_results.file_id = records.file_id
        and first_tool_results.line_no = records.line_no
)

select * from final
