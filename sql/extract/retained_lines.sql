-- grain: one row per run of consecutive lines of one epoch that a store read whole gave
-- before and gives no longer, kept live because their session has no line in the file's new
-- version (a session deleted inside a database). A line whose session goes on elsewhere in
-- the file (a message edited, a chat taken up again) is not kept: its new line stands for it.
-- input: file_records (file_id, file_epoch, line_no, session_id of the files' records, in the
--        lake and loaded by this run), dropped_runs and version_runs (file_id, epoch,
--        first_line, last_line): the lines the file held before and holds no longer (with the
--        ones it kept already), and the lines of its new version
with dropped as (
    select distinct r.file_id, r.file_epoch as epoch, r.line_no, r.session_id
    from file_records as r
    join dropped_runs as d
        on d.file_id = r.file_id
        and d.epoch = r.file_epoch
        and r.line_no between d.first_line and d.last_line
    where r.session_id is not null
),

-- of the sessions dropped, those with a line in the new version
going_on as (
    select distinct r.file_id, r.session_id
    from file_records as r
    join version_runs as v
        on v.file_id = r.file_id
        and v.epoch = r.file_epoch
        and r.line_no between v.first_line and v.last_line
    semi join dropped as d
        on d.file_id = r.file_id
        and d.session_id = r.session_id
),

kept as (
    select distinct file_id, epoch, line_no
    from dropped
    anti join going_on using (file_id, session_id)
),

islands as (
    select
        file_id,
        epoch,
        line_no,
        line_no - row_number() over (partition by file_id, epoch order by line_no) as island
    from kept
),

final as (
    select file_id, epoch, min(line_no) as first_line, max(line_no) as last_line
    from islands
    group by file_id, epoch, island
)

select * from final order by file_id, epoch, first_line
