-- grain: one row per message position on the default branch of a Claude Code session file, once per walk: graph = 'full' (the whole logical history, across compact boundaries) or 'resume' (what Claude Code reloads), the node at that position, whether it was recovered as an orphaned parallel tool call and whether the walk was cut at a cycle
--
-- Both walks start at the default leaf (int_chain_leaves.is_default_leaf) and follow one
-- parent per step (claude-chain.md §3.6; a run of them at a time, int_chain_runs), capped at
-- the file's node count + 1 and cut at the first revisited node, so a parent cycle always
-- terminates.
--   full:   the Map's parents (progress bridged, no relink, nothing deleted); a compact
--           boundary whose parent is null continues from its logicalParentUuid.
--   resume: the parents left by the compact and snip steps; a null parent ends the walk.
-- Then orphaned parallel tool calls are recovered (§3.7): for each API message id on the
-- chain, its assistant entries off the chain and the tool results answering any of them are
-- spliced in right after the group's last on-chain entry, siblings first, each part ordered
-- by the timestamp string with map order breaking ties. Their own descendants are not followed.
-- The nodes' own columns are joined on in int_chain_paths, a step of its own: a transcript of
-- a million records needed about 1.2 GB to walk and join at once, where each alone ran in 500 MB
-- (the walk's materialized steps and its positions' window were held while the join built).
with recursive

-- (not materialized: each step is a table already, and a materialized CTE is a copy of it
-- that DuckDB cannot spill; a 600,000-record transcript then needed twice the memory)
nodes as not materialized (
    select * from int_chain_leaves
),

-- each walk's nodes with their parents in the Map (the walks' own parents: int_chain_runs)
edges as not materialized (
    select 'full' as graph, file_id, node, parent_node as map_parent_node
    from nodes

    union all

    select 'resume' as graph, file_id, node, resume_parent_node as map_parent_node
    from nodes
    where in_resume_map
),

default_leaves as (
    select file_id, node as leaf_node, session_id
    from nodes
    where is_default_leaf
),

runs as not materialized (
    select * from int_chain_runs where graph in ('full', 'resume')
),

-- the walk a run at a time (int_chain_runs): it enters a run at node `pos`, at depth `depth`,
-- and leaves from the run's first node to that node's parent, pos - run_head + 1 nodes on
run_walk(graph, file_id, run_head, pos, depth, node_count) as (
    select runs.graph, runs.file_id, runs.run_head, runs.pos, 1, runs.node_count
    from default_leaves
    join runs
        on runs.file_id = default_leaves.file_id
        and runs.node = default_leaves.leaf_node

    union all

    select
        run_walk.graph,
        run_walk.file_id,
        next.run_head,
        next.pos,
        run_walk.depth + run_walk.pos - run_walk.run_head + 1,
        run_walk.node_count
    from run_walk
    join runs as head
        on head.graph = run_walk.graph
        and head.file_id = run_walk.file_id
        and head.pos = run_walk.run_head
    join runs as next
        on next.graph = run_walk.graph
        and next.file_id = run_walk.file_id
        and next.node = head.parent_node
    where run_walk.depth + run_walk.pos - run_walk.run_head + 1 <= run_walk.node_count + 1
),

-- one row per step of a walk of one parent a step: capped at the file's node count + 1
walk as materialized (
    select graph, file_id, node, depth, node_count
    from (
        select
            run_walk.graph,
            run_walk.file_id,
            runs.node,
            run_walk.depth + run_walk.pos - runs.pos as depth,
            run_walk.node_count
        from run_walk
        join runs
            on runs.graph = run_walk.graph
            and runs.file_id = run_walk.file_id
            and runs.run_head = run_walk.run_head
        where runs.pos <= run_walk.pos
    ) as steps
    where depth <= node_count + 1
),

walk_lengths as (
    select graph, file_id, max(depth) as max_depth, any_value(node_count) as node_count
    from walk
    group by graph, file_id
),

-- a simple path has at most node_count nodes, so only a walk that went further revisited one;
-- it is cut at its first revisit
cut_points as (
    select graph, file_id, min(depth) as cut_depth
    from (
        select
            walk.*,
            min(walk.depth) over (partition by walk.graph, walk.file_id, walk.node) as first_depth
        from walk
        semi join walk_lengths
            on walk_lengths.graph = walk.graph
            and walk_lengths.file_id = walk.file_id
            and walk_lengths.max_depth > walk_lengths.node_count
    ) as cyclic_walks
    where depth > first_depth
    group by graph, file_id
),

chain as materialized (
    select
        walk.graph,
        walk.file_id,
        walk.node,
        coalesce(cut_points.cut_depth - 1, walk_lengths.max_depth) - walk.depth + 1 as idx,
        cut_points.cut_depth is not null as is_cycle_cut
    from walk
    join walk_lengths
        on walk_lengths.graph = walk.graph
        and walk_lengths.file_id = walk.file_id
    left join cut_points
        on cut_points.graph = walk.graph
        and cut_points.file_id = walk.file_id
    where cut_points.cut_depth is null
        or walk.depth < cut_points.cut_depth
),

map_entries as not materialized (
    select
        edges.graph,
        edges.file_id,
        edges.node,
        edges.map_parent_node,
        nodes.record_type,
        nodes.kind,
        nodes.api_message_id,
        nodes.timestamp_raw
    from edges
    join nodes
        on nodes.file_id = edges.file_id
        and nodes.node = edges.node
),

anchors as (
    select
        chain.graph,
        chain.file_id,
        map_entries.api_message_id,
        max(chain.idx) as anchor_idx
    from chain
    join map_entries
        on map_entries.graph = chain.graph
        and map_entries.file_id = chain.file_id
        and map_entries.node = chain.node
    where map_entries.record_type = 'assistant'
        and map_entries.api_message_id is not null
    group by chain.graph, chain.file_id, map_entries.api_message_id
),

group_members as (
    select
        map_entries.graph,
        map_entries.file_id,
        map_entries.node,
        map_entries.timestamp_raw,
        anchors.anchor_idx
    from map_entries
    join anchors
        on anchors.graph = map_entries.graph
        and anchors.file_id = map_entries.file_id
        and anchors.api_message_id = map_entries.api_message_id
    where map_entries.record_type = 'assistant'
),

orphan_siblings as (
    select
        graph,
        file_id,
        node,
        anchor_idx,
        0 as part,
        timestamp_raw,
        node as member_node
    from group_members
),

orphan_results as (
    select
        results.graph,
        results.file_id,
        results.node,
        members.anchor_idx,
        1 as part,
        results.timestamp_raw,
        members.node as member_node
    from map_entries as results
    join group_members as members
        on members.graph = results.graph
        and members.file_id = results.file_id
        and members.node = results.map_parent_node
    where results.record_type = 'user'
        and results.kind = 'tool_result'
),

recovered as (
    select
        candidates.*,
        row_number() over (
            partition by candidates.graph, candidates.file_id, candidates.anchor_idx
            order by candidates.part, candidates.timestamp_raw nulls last,
                candidates.member_node, candidates.node
        ) as sub
    from (
        select * from orphan_siblings
        union all
        select * from orphan_results
    ) as candidates
    anti join chain
        on chain.graph = candidates.graph
        and chain.file_id = candidates.file_id
        and chain.node = candidates.node
),

ordered as (
    select graph, file_id, node, idx, 0 as sub, false as is_recovered, is_cycle_cut
    from chain

    union all

    select
        recovered.graph,
        recovered.file_id,
        recovered.node,
        recovered.anchor_idx as idx,
        recovered.sub,
        true as is_recovered,
        false as is_cycle_cut
    from recovered
),

positioned as (
    select
        graph,
        file_id,
        node,
        row_number() over (partition by graph, file_id order by idx, sub) as position,
        is_recovered,
        bool_or(is_cycle_cut) over (partition by graph, file_id) as is_cycle_cut
    from ordered
),

final as (
    select graph, file_id, node, position, is_recovered, is_cycle_cut
    from positioned
)

select * from final
