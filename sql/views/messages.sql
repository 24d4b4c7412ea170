-- grain: one row per physical record that carries a message (user, assistant or system), in
-- every session of every source; message_id is the source's own id (Claude Code's uuid)
with records as (
    select * from stg_records
),

final as (
    select
        session_id,
        message_id,
        parent_id,
        role,
        kind,
        "timestamp",
        text,
        is_sidechain,
        source_file,
        line_no,
        source,
        harness_kind,
        model,
        api_message_id,
        request_id,
        is_meta,
        is_compact_summary,
        input_tokens,
        output_tokens,
        cache_creation_tokens,
        cache_read_tokens,
        file_id,
        byte_offset
    from records
    where role is not null
)

select * from final
