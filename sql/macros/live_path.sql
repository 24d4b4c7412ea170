-- grain: a table macro, live_path(session_ids): one row per record of the given sessions'
-- files in a source that keeps its history as a tree of parent links, with on_path: whether
-- the record lies on the path the agent replays when it resumes, walked up the parent links
-- from the file's last entry (Gemini CLI, Qwen Code, Pi, OpenClaw). A record off it is on a
-- branch the person left: a rewind, a fork, a jump elsewhere in the tree. A record with no
-- id of its own, and a subagent's record on its side chain, count as on it.
--
-- Other sources have no rows, and all of their records count: Claude Code has its own chain
-- views, and elsewhere a parent link means something else (OpenCode's parentID is the request
-- an answer replies to, Kimi Code's a step) or no resume rule is known (Copilot CLI, Factory
-- droid). Nor has a file with no parent link at all (Pi's linear v1 files), nor one whose
-- walk breaks off (below).
--
-- A macro over given sessions, made on the reading connection, not a view: DuckDB walks a
-- recursive view for every session before it filters one (12 s for 600,000 entries).
create or replace temp macro live_path(session_ids) as table
with recursive

entries as materialized (
    select session_id, file_id, line_no, message_id, parent_id, kind, is_sidechain
    from stg_records
    where source in ('gemini_cli', 'qwen_code', 'pi', 'openclaw')
        and list_contains(session_ids::varchar[], session_id)
),

-- files with parent links; in one that holds a subagent's side chain besides the main
-- conversation (Qwen Code), the walk starts from the main conversation's last entry. The id
-- a file's first entry hangs from is none, or the session's own (OpenClaw)
trees as (
    select
        file_id,
        session_id,
        bool_and(is_sidechain) as side_only,
        arg_min(parent_id, line_no) filter (where message_id is not null) as root_parent
    from entries
    group by file_id, session_id
    having count(parent_id) > 0
),

-- one node per id: Qwen Code writes a message in fragments that share it (and walks from the
-- first one's parent), Gemini CLI writes a message again as it completes (each names the same)
nodes as materialized (
    select file_id, session_id, message_id, arg_min(parent_id, line_no) as parent_id
    from entries
    where message_id is not null
    group by file_id, session_id, message_id
),

-- the last entry: a message, or a Gemini CLI rewind or checkpoint, whose parent link names
-- the message the conversation goes on from (none when everything was rewound)
leaves as (
    select
        file_id,
        session_id,
        arg_max(coalesce(entries.message_id, entries.parent_id), entries.line_no) as leaf
    from entries
    join trees using (file_id, session_id)
    where (entries.message_id is not null or entries.kind in ('rewind', 'checkpoint'))
        and (not entries.is_sidechain or trees.side_only)
    group by file_id, session_id
),

-- union, not union all: a cycle of parent links in a damaged file ends the walk
walk(file_id, session_id, message_id) as (
    select file_id, session_id, leaf
    from leaves
    where leaf is not null
    union
    select nodes.file_id, nodes.session_id, nodes.parent_id
    from walk
    join nodes using (file_id, session_id, message_id)
    where nodes.parent_id is not null
),

-- a walk that reaches an id that is neither an entry of the file nor where its first entry
-- hangs went through a damaged link (a result pointing at its call's id, in a hand-made
-- sample): where the conversation runs cannot be told, so every record of the file counts
broken as (
    select distinct walk.file_id, walk.session_id
    from walk
    join trees using (file_id, session_id)
    anti join nodes using (file_id, session_id, message_id)
    where walk.message_id is distinct from trees.root_parent
),

final as (
    select
        entries.session_id,
        entries.file_id,
        entries.line_no,
        entries.message_id is null
            or (entries.is_sidechain and not trees.side_only)
            or walk.message_id is not null as on_path
    from entries
    join trees using (file_id, session_id)
    anti join broken using (file_id, session_id)
    left join walk using (file_id, session_id, message_id)
)

select * from final
