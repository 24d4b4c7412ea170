-- A rewritten whole container whose lines first differ after line k keeps its first k lines
-- where they were loaded and loads the rest as a new epoch, so the current version of such a
-- file is several loads, each live from its first line up to the next one's. One row per
-- load still live, for files of more than one; any other file is its current epoch whole.
create table if not exists file_versions (
    file_id     bigint not null,
    epoch       integer not null,
    first_line  bigint not null,
    primary key (file_id, epoch)
);

-- The running hash after each line a whole container last gave (8 bytes a line), for the
-- adapters whose SQL reads lines on their own: the next read finds where its lines part.
create table if not exists file_line_hashes (
    file_id bigint primary key,
    hashes  blob not null
);
