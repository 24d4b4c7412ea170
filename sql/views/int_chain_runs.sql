-- grain: one row per node of a Claude Code session file in each parent graph the chain steps walk, with its place in the file's node order (pos) and the first node of its run (run_head)
--
--   full:   the Map's parents, a compact boundary whose parent is null continuing from its
--           logicalParentUuid (the whole logical history)
--   map:    the Map's parents as written (progress bridged)
--   resume: the parents left by the compact and snip steps; only the nodes Claude Code keeps
--
-- A recursive walk takes one step a node, and a step costs about the same however few rows it
-- moves (a bare walk of 200,000 steps took 1.1 s here), so a long transcript's walks took
-- seconds at every pick-up. Most of a transcript is runs of nodes each of whose parent is the
-- node just before it in node order. With the nodes numbered (pos) and each given the pos of
-- its run's first node (run_head), a walk crosses a run in one step: up from a node to its run's
-- first node is pos - run_head + 1 nodes, and the whole run hangs below that first node. A run
-- never holds a cycle: each of its parents comes before its child. The three graphs share the
-- file's node order, so one pass over the nodes numbers all three.
with nodes as (
    select * from int_chain_leaves
),

parents as (
    select
        file_id,
        node,
        coalesce(
            parent_node,
            case when is_compact_boundary and parent_id is null then logical_parent_node end
        ) as full_parent,
        parent_node as map_parent,
        resume_parent_node as resume_parent,
        in_resume_map,
        file_node_count,
        resume_node_count
    from nodes
),

-- every node in node order (pos), and the nodes of the resume map among them (resume_pos)
numbered as (
    select
        *,
        row_number() over by_node as pos,
        lag(node) over by_node as prev,
        sum(in_resume_map::int) over to_here as resume_pos,
        max(case when in_resume_map then node end) over before_here as resume_prev
    from parents
    window
        by_node as (partition by file_id order by node),
        to_here as (partition by file_id order by node rows unbounded preceding),
        before_here as (partition by file_id order by node rows between unbounded preceding and 1 preceding)
),

-- a node starts a run unless its parent is the node just before it in its graph
heads as (
    select
        *,
        max(case when coalesce(full_parent <> prev, true) then pos end) over to_here as full_head,
        max(case when coalesce(map_parent <> prev, true) then pos end) over to_here as map_head,
        max(case when in_resume_map and coalesce(resume_parent <> resume_prev, true) then resume_pos end)
            over to_here as resume_head
    from numbered
    window to_here as (partition by file_id order by node rows unbounded preceding)
),

final as (
    select 'full' as graph, file_id, node, full_parent as parent_node, file_node_count as node_count,
        pos, full_head as run_head
    from heads

    union all

    select 'map' as graph, file_id, node, map_parent as parent_node, file_node_count as node_count,
        pos, map_head as run_head
    from heads

    union all

    select 'resume' as graph, file_id, node, resume_parent as parent_node, resume_node_count as node_count,
        resume_pos as pos, resume_head as run_head
    from heads
    where in_resume_map
)

select * from final
