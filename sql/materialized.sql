-- grain: as the view of the same name in sql/views/ states: its rows, computed by ingest for
-- each file in the run that last changed it, for the current version of each file
with computed as (
    select * from lake_{name}
),

latest as (
    select file_id, chain_run_id
    from source_files
    join int_current_files using (file_id)
),

final as (
    select computed.* exclude (chain_run_id, source, month), computed.source
    from computed
    join latest using (file_id, chain_run_id)
)

select * from final
