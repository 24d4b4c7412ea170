-- grain: one row per leaf of a Claude Code session file (every branch end: the live one, rewinds, forks, dead parallel tool results), with the branch Claude Code resumes flagged is_default
--
-- Leaves and the default one come from int_chain_leaves (claude-chain.md §3.5). `length`
-- counts the entries from the root to the leaf along the parents Claude Code resumes with
-- (before parallel tool results are recovered and the resume filters run). `summary` is the
-- last `summary` record of the same file whose leafUuid names the leaf.
with recursive

resume_map as materialized (
    select *
    from int_chain_leaves
    where in_resume_map
),

-- depth of every node reachable from a root
depths as (
    select file_id, node, depth from int_chain_depths where graph = 'resume'
),

-- a leaf that hangs below a parent cycle has no root: count its path up to the first repeat
unrooted_walk(file_id, leaf_node, node, parent_node, steps, cap) as (
    select
        resume_map.file_id,
        resume_map.node,
        resume_map.node,
        resume_map.resume_parent_node,
        1,
        resume_map.resume_node_count
    from resume_map
    anti join depths
        on depths.file_id = resume_map.file_id
        and depths.node = resume_map.node
    where resume_map.is_leaf

    union all

    select
        walk.file_id,
        walk.leaf_node,
        resume_map.node,
        resume_map.resume_parent_node,
        walk.steps + 1,
        walk.cap
    from unrooted_walk as walk
    join resume_map
        on resume_map.file_id = walk.file_id
        and resume_map.node = walk.parent_node
    where walk.steps <= walk.cap
),

lengths as (
    select file_id, node, depth as length
    from depths

    union all

    select file_id, leaf_node as node, count(distinct node) as length
    from unrooted_walk
    group by file_id, leaf_node
),

summaries as (
    select
        file_id,
        chain_raw ->> '$.leafUuid' as leaf_id,
        arg_max(chain_raw ->> '$.summary', line_no) as summary
    from stg_records
    where source = 'claude_code'
        and record_type = 'summary'
    group by file_id, leaf_id
    having leaf_id is not null
),

final as (
    select
        leaves.session_id,  -- session the row belongs to; unique within its source (join sessions on source, session_id)
        leaves.message_id as leaf_id,  -- uuid of the branch's last message (the leaf)
        leaves.is_default_leaf as is_default,  -- the branch Claude Code resumes; one per file
        leaves."timestamp" as leaf_timestamp,  -- time of the leaf message (UTC)
        summaries.summary,  -- text of the file's last summary record that names this leaf, if any
        lengths.length,  -- messages from the root to the leaf along the parents Claude Code resumes with
        leaves.is_sidechain,  -- the leaf is on a subagent's side chain
        records.role as leaf_role,  -- role of the leaf message
        leaves.kind as leaf_kind,  -- kind of the leaf record (as in messages.kind)
        records.text as leaf_text,  -- plain text of the leaf message
        records.source,  -- always claude_code
        leaves.file_id,  -- warehouse id of the transcript file; chains never cross files
        leaves.node as leaf_node,  -- the leaf's node id in the file (the first line its uuid appears on)
        leaves.line_no as leaf_line_no,  -- line of the leaf record in the file (the last line written for its uuid)
        records.source_file  -- path of the transcript file
    from resume_map as leaves
    join stg_records as records
        on records.file_id = leaves.file_id
        and records.line_no = leaves.line_no
    left join lengths
        on lengths.file_id = leaves.file_id
        and lengths.node = leaves.node
    left join summaries
        on summaries.file_id = leaves.file_id
        and summaries.leaf_id = leaves.message_id
    where leaves.is_leaf
)

select * from final
