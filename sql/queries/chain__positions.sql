-- grain: one row per message of the given sessions' rebuilt chains (or, for sources without a
-- chain view row, their messages in time and file order, less those on a branch left: live_path),
-- with its position as `show` numbers it
-- parameters: $session_ids
with chained as (
    select session_id, message_id, seq
    from chain_messages
    where list_contains($session_ids::varchar[], session_id)
),

flat as (
    select
        messages.session_id,
        message_id,
        row_number() over (
            partition by messages.session_id
            order by "timestamp" nulls last, file_id, line_no
        ) as seq
    from messages
    left join live_path($session_ids) as live using (file_id, line_no)
    where list_contains($session_ids::varchar[], messages.session_id)
        and coalesce(live.on_path, true)
        and messages.session_id not in (select session_id from chained)
)

select * from chained
union all
select * from flat
