-- The groups a whole container's lines came in (a Cursor chat), each with the hash of the rows
-- it was made of: a group whose rows are the same at the next read is taken as it was, without
-- making its lines (etl/containers.py LinesDigest). Null for a container read before this
-- version, or one whose adapter gives no groups.
alter table file_line_hashes add column if not exists groups blob;
