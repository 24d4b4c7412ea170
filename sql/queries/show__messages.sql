-- grain: one row per message of one session as `convarch show` prints it: the rebuilt chain
-- where the source has one, else every message in time and file order (less those on a branch
-- the session left, where its source keeps a tree: live_path); with its record
-- parameters: $session_id
with chain as (
    select seq, message_id, role, kind, harness_kind, "timestamp", text, model, file_id, line_no
    from chain_messages
    where session_id = $session_id
),

flat as (
    select
        row_number() over (order by "timestamp" nulls last, file_id, line_no) as seq,
        message_id, role, kind, harness_kind, "timestamp", text, model, file_id, line_no
    from messages
    left join live_path([$session_id]) as live using (file_id, line_no)
    where messages.session_id = $session_id
        and coalesce(live.on_path, true)
        and not exists (select 1 from chain)
),

turns as (
    select * from chain
    union all
    select * from flat
),

calls as (
    select file_id, line_no, list({'tool': tool_name, 'path': path, 'command': command} order by call_id) as calls
    from tool_calls
    where session_id = $session_id
    group by file_id, line_no
),

results as (
    select file_id, line_no, string_agg(output_text, chr(10) order by block_index) as output
    from stg_blocks
    where session_id = $session_id and block_type = 'tool_result'
    group by file_id, line_no
),

final as (
    select
        turns.*,
        calls.calls,
        results.output,
        r.raw
    from turns
    left join calls using (file_id, line_no)
    left join results using (file_id, line_no)
    left join stg_records as r
        on r.file_id = turns.file_id and r.line_no = turns.line_no and r.session_id = $session_id
)

select * from final
order by seq
