-- grain: one row per defect found in a Claude Code session file's message graph: missing_parent, cycle, broken_segment, unjoined_tool_result or unresolved_tool_use, with the message it concerns
--
--   missing_parent       a parentUuid (after progress bridging) naming no entry of the file; the
--                        chain silently ends there (a compact boundary's null parent is not one)
--   cycle                a member of a parent cycle, in the Map's parents or after the resume
--                        relinks; walks cut it at the first revisit and it is never a leaf
--   broken_segment       a compact boundary whose live preservedSegment walk (tail -> head)
--                        broke, so Claude Code loads the whole pre-compaction history
--   unjoined_tool_result a tool_result block whose tool_use_id has no tool_use in the file
--   unresolved_tool_use  a tool_use block that no tool_result in the file answers
-- detail holds the id the issue is about (the missing parent, the call id).
with recursive

-- (not materialized: each step is a table already, and a materialized CTE is a copy of it
-- that DuckDB cannot spill; a 600,000-record transcript then needed twice the memory)
nodes as not materialized (
    select * from int_chain_relinked
),

missing_parents as (
    select file_id, 'missing_parent' as issue, message_id, parent_id as detail
    from nodes
    where parent_id is not null
        and parent_node is null
),

graph_edges as materialized (
    select 'map' as graph, file_id, node, parent_node
    from nodes

    union all

    select 'resume' as graph, file_id, node, resume_parent_node as parent_node
    from nodes
    where in_resume_map
),

rooted as (
    select graph, file_id, node from int_chain_depths
),

-- nodes no root reaches: cycle members and whatever hangs below them
unrooted as materialized (
    select
        graph_edges.*,
        count(*) over (partition by graph_edges.graph, graph_edges.file_id) as unrooted_count
    from graph_edges
    anti join rooted
        on rooted.graph = graph_edges.graph
        and rooted.file_id = graph_edges.file_id
        and rooted.node = graph_edges.node
),

-- pointer doubling: after level k, ancestor is 2^k parents up. Once 2^k reaches the number of
-- unrooted nodes every walk has entered its cycle, and those ancestors are the cycle members.
ancestors(graph, file_id, node, ancestor, level, unrooted_count) as (
    select graph, file_id, node, parent_node, 0, unrooted_count
    from unrooted

    union all

    select here.graph, here.file_id, here.node, up.ancestor, here.level + 1, here.unrooted_count
    from ancestors as here
    join ancestors as up
        on up.graph = here.graph
        and up.file_id = here.file_id
        and up.node = here.ancestor
    where (2 ** here.level) < here.unrooted_count
),

cycle_members as (
    select distinct ancestors.file_id, ancestors.ancestor as node
    from ancestors
    where (2 ** ancestors.level) >= ancestors.unrooted_count
),

cycles as (
    select nodes.file_id, 'cycle' as issue, nodes.message_id, nodes.parent_id as detail
    from cycle_members
    join nodes
        on nodes.file_id = cycle_members.file_id
        and nodes.node = cycle_members.node
),

broken_segments as (
    select file_id, 'broken_segment' as issue, message_id, null as detail
    from nodes
    where segment_state = 'broken'
),

blocks as materialized (
    select file_id, message_id, block_type, call_id
    from stg_blocks
    where source = 'claude_code'
        and call_id is not null
        and block_type in ('tool_use', 'server_tool_use', 'tool_result')
),

unjoined_results as (
    select distinct
        results.file_id,
        'unjoined_tool_result' as issue,
        results.message_id,
        results.call_id as detail
    from blocks as results
    anti join blocks as calls
        on calls.file_id = results.file_id
        and calls.call_id = results.call_id
        and calls.block_type in ('tool_use', 'server_tool_use')
    where results.block_type = 'tool_result'
),

unresolved_calls as (
    select distinct
        calls.file_id,
        'unresolved_tool_use' as issue,
        calls.message_id,
        calls.call_id as detail
    from blocks as calls
    anti join blocks as results
        on results.file_id = calls.file_id
        and results.call_id = calls.call_id
        and results.block_type = 'tool_result'
    where calls.block_type = 'tool_use'
),

issues as (
    select * from missing_parents
    union all
    select * from cycles
    union all
    select * from broken_segments
    union all
    select * from unjoined_results
    union all
    select * from unresolved_calls
),

file_sessions as (
    select file_id, any_value(session_id) as session_id, any_value(source_file) as source_file
    from stg_records
    where source = 'claude_code'
    group by file_id
),

final as (
    select
        file_sessions.session_id,  -- session the row belongs to; unique within its source (join sessions on source, session_id)
        issues.issue,  -- missing_parent, cycle, broken_segment, unjoined_tool_result or unresolved_tool_use
        issues.message_id,  -- uuid of the message the issue concerns
        issues.detail,  -- the id the issue is about: the missing parent's uuid, or the call id
        issues.file_id,  -- warehouse id of the transcript file; chains never cross files
        file_sessions.source_file  -- path of the transcript file
    from issues
    join file_sessions
        on file_sessions.file_id = issues.file_id
)

select * from final
