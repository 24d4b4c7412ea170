-- grain: one row per session part of a file's previous version (a file whose tail was
-- replaced) for a session whose records it all keeps, relabelled with the new epoch: such a
-- session's facts are those parts' facts. A session keeps all its records exactly when its
-- parts count as many records as it keeps; one the replaced lines held records of counts
-- more, and is derived again from the records it keeps instead (as is one whose parts, for
-- whatever reason, count fewer).
-- input: lake_parts (the lake's session parts), kept_sessions (extract/kept_sessions),
--        epochs(file_id, prev_epoch, new_epoch)
with prev_parts as (
    select p.*, e.new_epoch
    from lake_parts as p
    join epochs as e
        on e.file_id = p.file_id
        and e.prev_epoch = p.file_epoch
),

whole_sessions as (
    select p.file_id, p.session_id
    from prev_parts as p
    join kept_sessions as k
        on k.file_id = p.file_id
        and k.session_id = p.session_id
    group by p.file_id, p.session_id, k.kept_records
    having sum(p.record_count) = k.kept_records
),

final as (
    select p.* exclude (new_epoch) replace (p.new_epoch as file_epoch)
    from prev_parts as p
    semi join whole_sessions as w
        on w.file_id = p.file_id
        and w.session_id = p.session_id
)

select * from final
