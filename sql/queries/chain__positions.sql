-- grain: one row per message of the given sessions' rebuilt chains (or, for sources without a
-- chain view row, their messages in time and file order), with its position as `show` numbers it
-- parameters: $session_ids
with chained as (
    select session_id, message_id, seq
    from chain_messages
    where list_contains($session_ids::varchar[], session_id)
),

flat as (
    select
        session_id,
        message_id,
        row_number() over (partition by session_id order by "timestamp" nulls last, file_id, line_no) as seq
    from messages
    where list_contains($session_ids::varchar[], session_id)
        and session_id not in (select session_id from chained)
)

select * from chained
union all
select * from flat
