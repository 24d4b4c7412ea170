-- grain: one row per searchable document of this batch, with its length in words (for BM25)
-- input: search_words_batch
select source, session_id, file_id, file_epoch, line_no, field, month, count(*)::bigint as length
from search_words_batch
group by all
