-- The private state of ingest: which source files were read how far, which Parquet files
-- hold the archive, and what each run did. No reader ever opens this database.

create sequence if not exists file_id_seq start 1;
create sequence if not exists run_id_seq start 1;

create table if not exists ingest_runs (
    run_id          bigint primary key,
    started_at      timestamp not null,
    finished_at     timestamp,
    status          varchar not null,      -- running | committed | failed
    sources         varchar[],
    files_scanned   bigint default 0,
    files_changed   bigint default 0,
    records_added   bigint default 0,
    quarantined     bigint default 0,
    seconds         double
);

-- one row per source file ever seen; the watermark that makes re-runs cheap and exact
create table if not exists source_files (
    file_id            bigint primary key,
    source             varchar not null,
    path               varchar not null,
    dev                bigint,
    inode              bigint,
    size               bigint,
    mtime_ns           bigint,
    "offset"           bigint not null default 0,  -- byte just past the last complete record read
    head_len           integer not null default 0,
    head_hash          varchar,                    -- blake2b of the first head_len bytes
    epoch              integer not null default 1, -- bumped when the file is rewritten
    tail_bytes         bigint not null default 0,  -- bytes after offset: an incomplete last line
    lines_read         bigint not null default 0,  -- physical lines before offset
    records            bigint not null default 0,
    quarantined        bigint not null default 0,
    session_hint       varchar,
    parent_session_hint varchar,
    first_run_id       bigint,
    last_run_id        bigint,
    gone               boolean not null default false,
    unique (source, path)
);

-- every Parquet file that belongs to the archive
create table if not exists data_files (
    path        varchar primary key,               -- relative to the lake directory
    table_name  varchar not null,                  -- records | blocks | quarantine
    source      varchar not null,
    month       varchar not null,
    run_id      bigint not null,
    row_count   bigint not null,
    bytes       bigint not null,
    retired_run_id bigint
);
