-- grain: one row per distinct message id of each source. Resumed and forked sessions copy
-- earlier records (same id) into their own file, so a message can appear in several
-- sessions' chains; here it appears once, from the session that started first, with the
-- number of copies the archive holds.
with copies as (
    select
        m.*,
        s.started_at as session_started_at,
        count(*) over (partition by m.source, m.message_id) as copy_count,
        row_number() over (
            partition by m.source, m.message_id
            -- a file's lines kept from earlier versions (file_retained) can share a line
            -- number with its current ones: the session then decides
            order by s.started_at nulls last, m.file_id, m.line_no, m.session_id
        ) as copy_rank
    from messages as m
    left join sessions as s using (source, session_id)
    where m.message_id is not null
),

final as (
    select
        source,  -- agent the message comes from
        message_id,  -- the source's own id of the message
        session_id,  -- the earliest-started session holding a copy: the canonical one
        role,  -- user, assistant or system
        kind,  -- prompt, tool_result, response, tool_use, thinking, system or compact_boundary
        "timestamp",  -- when the canonical copy was written (UTC)
        text,  -- plain text of the message
        copy_count,  -- how many records with this id the archive holds, across all sessions
        file_id,  -- warehouse id of the canonical copy's file
        line_no  -- line of the canonical copy in that file
    from copies
    where copy_rank = 1
)

select * from final
