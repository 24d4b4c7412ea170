-- grain: one row per word of each searchable document of this batch
-- input: search_docs_batch
select source, session_id, file_id, file_epoch, line_no, field, month,
    unnest(regexp_extract_all(body, '[A-Za-z0-9_]+')) as word
from search_docs_batch
