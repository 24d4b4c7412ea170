-- The lines a whole container (a JSON document, a SQLite family, zstd JSONL) gave when it was
-- last read: how many (lines_read) and a blake2b of them. A rewritten container whose lines
-- are the same loads nothing; one whose lines begin with all of them loads only the rest,
-- where its adapter's SQL reads each line on its own (LINES_STAND_ALONE).
alter table source_files add column if not exists lines_hash varchar;
