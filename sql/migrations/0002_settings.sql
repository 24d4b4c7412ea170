-- Choices a warehouse keeps across runs once made (e.g. redacting secrets at ingest), so a
-- later run without the flag cannot silently store unredacted copies.
create table if not exists settings (
    key   varchar primary key,
    value varchar not null
);
