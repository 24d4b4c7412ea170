-- grain: one row per node of a Claude Code session file that a root reaches, in the Map's parents (graph = 'map') and in those Claude Code resumes with (graph = 'resume'), with its depth: 1 for a root
--
-- Top-down a run at a time (int_chain_runs): a run's first node is one below its parent and
-- each of its nodes one below the one before, so a run whose first node is reached is reached
-- whole. Nodes no root reaches (parent cycles and what hangs below them) have no row:
-- chain_issues finds the cycles among them, branches counts their leaves' paths apart.
with recursive

-- (not materialized: each step is a table already, and a materialized CTE is a copy of it
-- that DuckDB cannot spill; a 600,000-record transcript then needed twice the memory)
runs as not materialized (
    select * from int_chain_runs where graph in ('map', 'resume')
),

run_depths(graph, file_id, run_head, head_depth) as (
    select graph, file_id, run_head, 1
    from runs
    where pos = run_head
        and parent_node is null

    union all

    select child.graph, child.file_id, child.run_head, run_depths.head_depth + member.pos - member.run_head + 1
    from run_depths
    join runs as member
        on member.graph = run_depths.graph
        and member.file_id = run_depths.file_id
        and member.run_head = run_depths.run_head
    join runs as child
        on child.graph = member.graph
        and child.file_id = member.file_id
        and child.parent_node = member.node
        and child.pos = child.run_head
),

final as (
    select runs.graph, runs.file_id, runs.node, run_depths.head_depth + runs.pos - runs.run_head as depth
    from runs
    join run_depths
        on run_depths.graph = runs.graph
        and run_depths.file_id = runs.file_id
        and run_depths.run_head = runs.run_head
)

select * from final
