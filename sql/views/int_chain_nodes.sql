-- grain: one row per chain node of a Claude Code transcript file: a user, assistant, attachment or system record with a uuid, once per (file_id, message_id), with Claude Code's Map semantics and progress entries bridged
--
-- Claude Code loads one file into a Map<uuid, entry> (claude-chain.md §3.2):
--   * a uuid keeps the position of its FIRST line and the value of its LAST line, so `node`
--     (the first line_no) is both the node's integer id and its map position;
--   * legacy `progress` entries are not nodes: a message whose parent is a progress entry seen
--     earlier in the file is re-parented to the nearest non-progress ancestor of that run.
-- Every key includes file_id: chains are never joined across files. Only the columns the
-- rebuild needs are kept; the public views join stg_records on (file_id, line_no) for the rest.
with recursive

progress as (
    select file_id, line_no, message_id, parent_id
    from stg_records
    where source = 'claude_code'
        and record_type = 'progress'
        and message_id is not null
),

-- Each progress line points at the latest progress line, earlier in the file, whose uuid is
-- its parent: the state of the bridge map when the line was read.
progress_links as (
    select
        p.file_id,
        p.line_no,
        any_value(p.parent_id) as parent_id,
        max(earlier.line_no) as earlier_line_no
    from progress as p
    left join progress as earlier
        on earlier.file_id = p.file_id
        and earlier.message_id = p.parent_id
        and earlier.line_no < p.line_no
    group by p.file_id, p.line_no
),

-- A progress line with no earlier progress parent bridges to its own parent; every later line
-- of the run inherits that target (links always point backwards, so this terminates).
progress_bridge(file_id, line_no, bridge_to) as (
    select file_id, line_no, parent_id
    from progress_links
    where earlier_line_no is null

    union all

    select links.file_id, links.line_no, bridge.bridge_to
    from progress_bridge as bridge
    join progress_links as links
        on links.file_id = bridge.file_id
        and links.earlier_line_no = bridge.line_no
),

map_keys as (
    select
        file_id,
        message_id,
        min(line_no) as node,
        max(line_no) as value_line_no,
        -- the value line's parent; '' stands for null, which arg_max would skip
        nullif(arg_max(coalesce(parent_id, ''), line_no), '') as written_parent_id,
        count(*) as copies
    from stg_records
    where source = 'claude_code'
        and record_type in ('user', 'assistant', 'attachment', 'system')
        and message_id is not null
    group by file_id, message_id
),

file_facts as (
    select file_id, count(*) as file_node_count
    from map_keys
    group by file_id
),

-- the progress entry a message's parent names, as the bridge map stood when the message's
-- (last) line was read
bridge_hits as (
    select
        map_keys.file_id,
        map_keys.node,
        max(progress.line_no) as progress_line_no
    from map_keys
    join progress
        on progress.file_id = map_keys.file_id
        and progress.message_id = map_keys.written_parent_id
        and progress.line_no < map_keys.value_line_no
    group by map_keys.file_id, map_keys.node
),

bridge_targets as (
    select bridge_hits.file_id, bridge_hits.node, progress_bridge.bridge_to
    from bridge_hits
    join progress_bridge
        on progress_bridge.file_id = bridge_hits.file_id
        and progress_bridge.line_no = bridge_hits.progress_line_no
),

-- the map's values: the last line of every uuid, with the fields the extraction does not
-- type read from the verbatim line, kept as chain_raw where they occur
-- (sql/extract/stored_records.sql)
map_values as (
    select
        map_keys.node,
        map_keys.copies,
        records.* exclude (raw, chain_raw),
        records.kind = 'compact_boundary' as is_compact_boundary,
        -- (nested CASEs: DuckDB evaluates both sides of an AND, and JSON parsing is the cost)
        case
            when records.kind = 'compact_boundary' then
                case
                    when json_type(records.chain_raw -> '$.compactMetadata.preservedSegment') = 'OBJECT'
                        then json_transform(
                            records.chain_raw -> '$.compactMetadata.preservedSegment',
                            '{"headUuid": "VARCHAR", "anchorUuid": "VARCHAR",
                              "tailUuid": "VARCHAR"}'
                        )
                end
        end as preserved_segment,
        case
            when contains(records.chain_raw, '"snipMetadata"')
                then try_cast(records.chain_raw -> '$.snipMetadata.removedUuids' as varchar[])
        end as snip_removed_uuids,
        case
            when records.record_type = 'assistant' then
                case
                    when contains(records.chain_raw, '"isApiErrorMessage"')
                        then coalesce(
                            try_cast(records.chain_raw -> '$.isApiErrorMessage' as boolean), false
                        )
                    else false
                end
            else false
        end as is_api_error
    from map_keys
    join stg_records as records
        on records.file_id = map_keys.file_id
        and records.line_no = map_keys.value_line_no
),

bridged as (
    select
        map_values.*,
        bridge_targets.node is not null as parent_was_progress,
        case
            when bridge_targets.node is not null then bridge_targets.bridge_to
            else map_values.parent_id
        end as chain_parent_id
    from map_values
    left join bridge_targets
        on bridge_targets.file_id = map_values.file_id
        and bridge_targets.node = map_values.node
),

with_parent_node as (
    select
        bridged.*,
        parent.node as parent_node,
        logical_parent.node as logical_parent_node,
        file_facts.file_node_count
    from bridged
    join file_facts
        on file_facts.file_id = bridged.file_id
    left join map_keys as parent
        on parent.file_id = bridged.file_id
        and parent.message_id = bridged.chain_parent_id
    left join map_keys as logical_parent
        on logical_parent.file_id = bridged.file_id
        and logical_parent.message_id = bridged.logical_parent_id
),

final as (
    select
        session_id,
        file_id,
        node,
        line_no,
        message_id,
        chain_parent_id as parent_id,
        parent_node,
        parent_id as written_parent_id,
        parent_was_progress,
        logical_parent_id,
        logical_parent_node,
        copies,
        file_node_count,
        parent_session_id is not null as is_subagent_file,
        record_type,
        subtype,
        kind,
        timestamp_raw,
        "timestamp",
        is_sidechain,
        is_compact_boundary,
        is_api_error,
        api_message_id,
        preserved_segment,
        snip_removed_uuids
    from with_parent_node
)

select * from final
