-- A store read whole keeps each line it gave before where it was loaded, also when lines
-- before it are gone (a Cursor chat taken up again moves to the end of the store): a file's
-- current version is runs of lines, several of one epoch, and epoch 0 marks a run no longer
-- live (etl/live_lines.py). A run is known by its first line.
create table file_version_runs (
    file_id     bigint not null,
    epoch       integer not null,
    first_line  bigint not null,
    primary key (file_id, first_line)
);
insert into file_version_runs select file_id, epoch, first_line from file_versions;
drop table file_versions;
alter table file_version_runs rename to file_versions;

-- The hashes of the lines a whole container's current version holds, in line order: since
-- this version each line's own (8 bytes a line; source_files.lines_hash starts '2:'), before
-- it the running hash after each line.
comment on table file_line_hashes is 'hashes of the live lines of a whole container, in line order';
