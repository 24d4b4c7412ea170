"""What one ingest run did, as the CLI prints it and `--json` writes it."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Summary:
    run_id: int = 0
    sources: list[str] = field(default_factory=list)
    files_scanned: int = 0
    files_changed: int = 0
    files_skipped: int = 0
    sessions: int = 0
    records_added: int = 0
    quarantined: int = 0
    seconds: float = 0.0
    extract_seconds: float = 0.0
    index_seconds: float = 0.0
    chain_seconds: float = 0.0
    compact_seconds: float = 0.0
    files_merged: int = 0
    #: rows of derived tables that later ones superseded, left out when their files were rewritten
    rows_superseded: int = 0
    redacting: bool = False
    redacted: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: changed stores read whole that the caller asked to leave for a later run (`defer`)
    files_deferred: int = 0
    #: seconds spent reading each store read whole in this run (copy, lines, hashes), by path
    read_seconds: dict[str, float] = field(default_factory=dict)
    #: seconds spent rebuilding each changed file's chains in this run, by path (a group's
    #: time shared by its files' records; a long transcript is a group of its own)
    chain_seconds_by_file: dict[str, float] = field(default_factory=dict)
    #: seconds each stage of loading took, summed over the workers (etl/stage_clock.py)
    stage_seconds: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict:
        return {
            "run_id": self.run_id,
            "sources": self.sources,
            "files_scanned": self.files_scanned,
            "files_changed": self.files_changed,
            "files_skipped": self.files_skipped,
            "sessions": self.sessions,
            "records_added": self.records_added,
            "quarantined": self.quarantined,
            "seconds": round(self.seconds, 3),
            "extract_seconds": round(self.extract_seconds, 3),
            "index_seconds": round(self.index_seconds, 3),
            "chain_seconds": round(self.chain_seconds, 3),
            "compact_seconds": round(self.compact_seconds, 3),
            "stage_seconds": self.stage_seconds,
            "files_merged": self.files_merged,
            "rows_superseded": self.rows_superseded,
            "redacting": self.redacting,
            "redacted": self.redacted,
            "files_deferred": self.files_deferred,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
        }
