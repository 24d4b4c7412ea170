-- What kind of container a source file is (SourceFile.container: jsonl, json, sqlite), so the
-- views can tell a database from the files around it: a database keeps every session it
-- held, so a deleted file of one of them is not counted beside it (int_current_files). Set
-- at each load of a file; null for a file not loaded since.
alter table source_files add column if not exists container varchar;
