-- grain: one row per node of int_chain_nodes, with the parent Claude Code gives it on resume after the compact-boundary relink/prune (claude-chain.md §3.3) and snip removal (§3.4); in_resume_map is false for the nodes those steps delete
--
-- §3.3: only the last boundary that carries compactMetadata.preservedSegment matters, and only
-- if it is also the last boundary (otherwise the segment is stale). A live segment is walked
-- tail -> head; if the head is reached, head is re-parented to the anchor and the anchor's
-- other children to the tail. Unless a live walk broke, every node positioned before the last
-- boundary and not preserved is deleted. Files without a preserved segment are untouched
-- here: their plain boundaries (parent null) end the walk by themselves.
-- §3.4: entries still in the map may name removedUuids; those are deleted and each survivor
-- whose parent was deleted climbs to the nearest surviving ancestor (or becomes a root).
with recursive

-- (not materialized: each step is a table already, and a materialized CTE is a copy of it
-- that DuckDB cannot spill; a 600,000-record transcript then needed twice the memory)
nodes as not materialized (
    select * from int_chain_nodes
),

segment_files as (
    select
        file_id,
        max(node) filter (where is_compact_boundary) as last_boundary_node,
        max(node) filter (where is_compact_boundary and preserved_segment is not null)
            as segment_boundary_node,
        arg_max(preserved_segment, node)
            filter (where is_compact_boundary and preserved_segment is not null) as segment,
        any_value(file_node_count) as file_node_count
    from nodes
    group by file_id
    having count(*) filter (where is_compact_boundary and preserved_segment is not null) > 0
),

segments as (
    select
        file_id,
        last_boundary_node,
        segment_boundary_node,
        segment.headUuid as head_uuid,
        segment.anchorUuid as anchor_uuid,
        segment.tailUuid as tail_uuid,
        segment_boundary_node = last_boundary_node as is_live,
        file_node_count
    from segment_files
),

-- tail -> parent -> ... until the head, a missing node, or the cap (a cycle never reaches the
-- head, so the cap only bounds the work)
segment_walk(file_id, node, parent_node, head_uuid, steps, cap, at_head) as (
    select
        nodes.file_id,
        nodes.node,
        nodes.parent_node,
        segments.head_uuid,
        1,
        segments.file_node_count,
        nodes.message_id = segments.head_uuid
    from segments
    join nodes
        on nodes.file_id = segments.file_id
        and nodes.message_id = segments.tail_uuid
    where segments.is_live

    union all

    select
        nodes.file_id,
        nodes.node,
        nodes.parent_node,
        walk.head_uuid,
        walk.steps + 1,
        walk.cap,
        nodes.message_id = walk.head_uuid
    from segment_walk as walk
    join nodes
        on nodes.file_id = walk.file_id
        and nodes.node = walk.parent_node
    where not walk.at_head
        and walk.steps <= walk.cap
),

segment_outcomes as (
    select
        segments.*,
        coalesce(reached.head_reached, false) as head_reached,
        segments.is_live and coalesce(reached.head_reached, false) as relinks,
        not segments.is_live or coalesce(reached.head_reached, false) as prunes
    from segments
    left join (
        select file_id, bool_or(at_head) as head_reached
        from segment_walk
        group by file_id
    ) as reached
        on reached.file_id = segments.file_id
),

preserved as (
    select distinct segment_walk.file_id, segment_walk.node
    from segment_walk
    join segment_outcomes
        on segment_outcomes.file_id = segment_walk.file_id
    where segment_outcomes.relinks
),

compacted as (
    select
        nodes.*,
        preserved.node is not null as is_preserved,
        case
            when outcome.relinks and nodes.message_id = outcome.head_uuid then outcome.anchor_uuid
            when outcome.relinks and nodes.parent_id = outcome.anchor_uuid then outcome.tail_uuid
            else nodes.parent_id
        end as compacted_parent_id,
        coalesce(
            outcome.prunes
                and nodes.node < outcome.last_boundary_node
                and preserved.node is null,
            false
        ) as is_pruned,
        case
            when nodes.node = outcome.segment_boundary_node then
                case
                    when not outcome.is_live then 'stale'
                    when outcome.head_reached then 'relinked'
                    else 'broken'
                end
        end as segment_state
    from nodes
    left join segment_outcomes as outcome
        on outcome.file_id = nodes.file_id
    left join preserved
        on preserved.file_id = nodes.file_id
        and preserved.node = nodes.node
),

survivors as (
    select * from compacted where not is_pruned
),

snip_targets as (
    select distinct file_id, unnest(snip_removed_uuids) as message_id
    from survivors
    where snip_removed_uuids is not null
),

snipped as (
    select survivors.file_id, survivors.node, survivors.message_id, survivors.compacted_parent_id
    from survivors
    semi join snip_targets
        on snip_targets.file_id = survivors.file_id
        and snip_targets.message_id = survivors.message_id
),

-- climb from a survivor's deleted parent through deleted entries; an id named by a snip but
-- absent from the map resolves to null, as in Claude Code
snip_walk(file_id, node, cur, steps, cap) as (
    select
        survivors.file_id,
        survivors.node,
        survivors.compacted_parent_id,
        0,
        survivors.file_node_count
    from survivors
    semi join snip_targets
        on snip_targets.file_id = survivors.file_id
        and snip_targets.message_id = survivors.compacted_parent_id
    anti join snipped
        on snipped.file_id = survivors.file_id
        and snipped.node = survivors.node

    union all

    select walk.file_id, walk.node, snipped.compacted_parent_id, walk.steps + 1, walk.cap
    from snip_walk as walk
    semi join snip_targets
        on snip_targets.file_id = walk.file_id
        and snip_targets.message_id = walk.cur
    left join snipped
        on snipped.file_id = walk.file_id
        and snipped.message_id = walk.cur
    where walk.steps < walk.cap
),

snip_relinks as (
    select
        walk.file_id,
        walk.node,
        case when snip_targets.message_id is null then walk.cur end as snip_parent_id
    from snip_walk as walk
    left join snip_targets
        on snip_targets.file_id = walk.file_id
        and snip_targets.message_id = walk.cur
    qualify walk.steps = max(walk.steps) over (partition by walk.file_id, walk.node)
),

resolved as (
    select
        compacted.*,
        snipped.node is not null as is_snipped,
        not compacted.is_pruned and snipped.node is null as in_resume_map,
        case
            when compacted.is_pruned or snipped.node is not null then null
            when snip_relinks.node is not null then snip_relinks.snip_parent_id
            else compacted.compacted_parent_id
        end as resume_parent_id
    from compacted
    left join snipped
        on snipped.file_id = compacted.file_id
        and snipped.node = compacted.node
    left join snip_relinks
        on snip_relinks.file_id = compacted.file_id
        and snip_relinks.node = compacted.node
),

resume_keys as (
    select file_id, message_id, node
    from resolved
    where in_resume_map
),

resume_counts as (
    select file_id, count(*) as resume_node_count
    from resume_keys
    group by file_id
),

final as (
    select
        resolved.* exclude (compacted_parent_id),
        resume_parent.node as resume_parent_node,
        coalesce(resume_counts.resume_node_count, 0) as resume_node_count
    from resolved
    left join resume_keys as resume_parent
        on resume_parent.file_id = resolved.file_id
        and resume_parent.message_id = resolved.resume_parent_id
        and resolved.in_resume_map
    left join resume_counts
        on resume_counts.file_id = resolved.file_id
)

select * from final
