-- grain: one row per node of int_chain_relinked, flagging the leaves of the map Claude Code resumes from (claude-chain.md §3.5) and the one it picks (is_default_leaf)
--
-- From every terminal of the map (a node nobody names as parent, after the compact and snip
-- steps) walk up to the first user or assistant entry: that entry is a leaf. Cycle members are
-- never terminals, so never leaves; a trailing system entry resolves to its message.
-- The default leaf, per file: the newest leaf by timestamp at millisecond precision (as
-- Date.parse compares), a tie going to the earliest map position; an unparsable timestamp never
-- wins. Sidechain leaves are skipped in a main session file (legacy inline subagents), and are
-- the only candidates in a subagent file.
with recursive

-- (not materialized: each step is a table already, and a materialized CTE is a copy of it
-- that DuckDB cannot spill; a 600,000-record transcript then needed twice the memory)
nodes as not materialized (
    select * from int_chain_relinked
),

resume_map as (
    select *
    from nodes
    where in_resume_map
),

named_parents as (
    select distinct file_id, resume_parent_id as message_id
    from resume_map
    where resume_parent_id is not null
),

terminals as (
    select resume_map.file_id, resume_map.node
    from resume_map
    anti join named_parents
        on named_parents.file_id = resume_map.file_id
        and named_parents.message_id = resume_map.message_id
),

-- inclusive walk up to the first user/assistant entry; the cap bounds cycles of other types
leaf_walk(file_id, node, parent_node, is_message, steps, cap) as (
    select
        resume_map.file_id,
        resume_map.node,
        resume_map.resume_parent_node,
        resume_map.record_type in ('user', 'assistant'),
        1,
        resume_map.resume_node_count
    from terminals
    join resume_map
        on resume_map.file_id = terminals.file_id
        and resume_map.node = terminals.node

    union all

    select
        resume_map.file_id,
        resume_map.node,
        resume_map.resume_parent_node,
        resume_map.record_type in ('user', 'assistant'),
        walk.steps + 1,
        walk.cap
    from leaf_walk as walk
    join resume_map
        on resume_map.file_id = walk.file_id
        and resume_map.node = walk.parent_node
    where not walk.is_message
        and walk.steps <= walk.cap
),

leaves as (
    select distinct file_id, node
    from leaf_walk
    where is_message
),

default_leaves as (
    select
        resume_map.file_id,
        arg_max(resume_map.node, (epoch_ms(resume_map."timestamp"), -resume_map.node)) as node
    from leaves
    join resume_map
        on resume_map.file_id = leaves.file_id
        and resume_map.node = leaves.node
    where resume_map."timestamp" is not null
        and (not resume_map.is_sidechain or resume_map.is_subagent_file)
    group by resume_map.file_id
),

final as (
    select
        nodes.*,
        leaves.node is not null as is_leaf,
        default_leaves.node is not null as is_default_leaf
    from nodes
    left join leaves
        on leaves.file_id = nodes.file_id
        and leaves.node = nodes.node
    left join default_leaves
        on default_leaves.file_id = nodes.file_id
        and default_leaves.node = nodes.node
)

select * from final
