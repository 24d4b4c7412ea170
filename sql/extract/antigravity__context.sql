-- grain: per transcript, its lines from the last planner response or user input on: what
--        antigravity__records.sql needs to pair the tool steps appended after them with the
--        calls they answer (the k-th tool step after an anchor answers its k-th call)
-- Reads `earlier`: a file's lines already loaded (file_id, line_no, byte_offset, raw,
-- record_type, subtype, role), from the lake or an earlier batch; returns the same columns.
-- The loader hands these rows to the records query of the file's next lines as context it
-- reads and does not emit, so a transcript appended to in a later run (a live conversation
-- under `watch`), or bigger than one batch, pairs its steps as one whole read does.
with anchors as (
    -- the anchor kinds exist only as step types (a drift line's types are lower case)
    select file_id, max(line_no) as line_no
    from earlier
    where record_type in ('PLANNER_RESPONSE', 'USER_INPUT')
    group by file_id
)

select e.file_id, e.line_no, e.byte_offset, e.raw, e.record_type, e.subtype, e.role
from earlier as e
join anchors as a on a.file_id = e.file_id and e.line_no >= a.line_no
order by e.file_id, e.line_no
