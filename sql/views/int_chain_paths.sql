-- grain: one row per message on the default branch of a Claude Code session file, once per walk: graph = 'full' or 'resume' (int_chain_positions), ordered by position, with the node's columns that chain_messages and resume_messages read (a walk's rows are every node's twice over, so the rest are left behind)
with nodes as not materialized (
    select * from int_chain_leaves
),

positioned as not materialized (
    select * from int_chain_positions
),

default_leaves as (
    select file_id, session_id
    from nodes
    where is_default_leaf
),

final as (
    select
        default_leaves.session_id,
        positioned.graph,
        positioned.position,
        positioned.is_recovered,
        positioned.is_cycle_cut,
        nodes.file_id,
        nodes.node,
        nodes.line_no,
        nodes.message_id,
        nodes.parent_id,
        nodes.resume_parent_id,
        nodes.record_type,
        nodes.subtype,
        nodes.kind,
        nodes."timestamp",
        nodes.is_sidechain,
        nodes.is_compact_boundary,
        nodes.is_snipped,
        nodes.is_api_error,
        nodes.is_preserved,
        nodes.api_message_id
    from positioned
    join default_leaves
        on default_leaves.file_id = positioned.file_id
    join nodes
        on nodes.file_id = positioned.file_id
        and nodes.node = positioned.node
)

select * from final
