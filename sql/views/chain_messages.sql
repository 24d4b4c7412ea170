-- grain: one row per message of the full logical history of each Claude Code session's default branch, seq 1..n from the first message
--
-- The default branch (branches.is_default) walked from its leaf back to the root through the
-- file's own parents, continuing through every compact boundary to the message it logically
-- follows, so compacted and snipped messages are kept: compaction_index counts the compact
-- boundaries up to each message, is_snipped marks what a snip removed. Parallel tool calls
-- that the single-parent walk misses are recovered after their assistant message
-- (is_recovered).
-- resume_messages is what Claude Code itself reloads.
with paths as (
    select *
    from int_chain_paths
    where graph = 'full'
),

final as (
    select
        paths.session_id,
        paths.position as seq,
        paths.message_id,
        paths.parent_id,
        records.role,
        paths.kind,
        paths."timestamp",
        records.text,
        paths.record_type,
        paths.subtype,
        records.harness_kind,
        paths.is_sidechain,
        records.is_meta,
        records.is_compact_summary,
        paths.is_recovered,
        sum(paths.is_compact_boundary::integer) over (
            partition by paths.file_id
            order by paths.position
            rows between unbounded preceding and current row
        ) as compaction_index,
        paths.is_snipped,
        records.model,
        paths.api_message_id,
        records.request_id,
        records.input_tokens,
        records.output_tokens,
        records.cache_creation_tokens,
        records.cache_read_tokens,
        records.source,
        paths.file_id,
        paths.line_no,
        records.source_file
    from paths
    join stg_records as records
        on records.file_id = paths.file_id
        and records.line_no = paths.line_no
)

select * from final
