-- grain: one row per record of records_batch, as stored in the lake
-- The parsed `content` is not stored (raw keeps every byte). A metadata record's raw JSON is
-- also kept in its own narrow column, so session titles and tags are read without scanning
-- every record's raw JSON.
select
    * exclude (content),
    case when kind = 'metadata' then raw end as metadata_raw
from records_batch
