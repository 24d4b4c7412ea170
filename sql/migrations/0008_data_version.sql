-- A SQLite store's own marks of change as last read (etl/snapshot.py data_version): a commit
-- that keeps the database's size and time (two commits inside one tick of the clock that
-- stamps file times) changes them. Null for other files, and for a store not read since.
alter table source_files add column if not exists data_version varchar;
