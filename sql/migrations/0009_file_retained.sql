-- Lines a store read whole gave before and gives no longer, kept live because their session
-- has no line left in the file: a session deleted inside a database (goose, OpenCode,
-- Cursor ...) stays in the archive, as a transcript file deleted does. Each row is a run of
-- lines of one earlier epoch, first to last; the file's own versions (file_versions) do not
-- hold them (etl/retained.py).
create table file_retained (
    file_id     bigint not null,
    epoch       integer not null,
    first_line  bigint not null,
    last_line   bigint not null,
    primary key (file_id, epoch, first_line)
);
