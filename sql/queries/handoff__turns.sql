-- grain: one row per message of one session in conversation order: the rebuilt chain where the
-- source has one (chain_messages), else every message in time and file order, less those on a
-- branch the session left where its source keeps a tree (live_path)
-- parameters: $session_id
with chain as (
    select
        seq,
        message_id,
        role,
        kind,
        harness_kind,
        "timestamp",
        text,
        model,
        record_type,
        subtype,
        is_compact_summary
    from chain_messages
    where session_id = $session_id
),

flat as (
    select
        row_number() over (order by "timestamp" nulls last, file_id, line_no) as seq,
        message_id,
        role,
        kind,
        harness_kind,
        "timestamp",
        text,
        model,
        kind as record_type,
        null::varchar as subtype,
        is_compact_summary
    from messages
    left join live_path([$session_id]) as live using (file_id, line_no)
    where messages.session_id = $session_id
        and coalesce(live.on_path, true)
        and not exists (select 1 from chain)
),

final as (
    select * from chain
    union all
    select * from flat
)

select * from final
order by seq
