"""Codex CLI (openai/codex): one rollout file per thread under ``$CODEX_HOME`` (``~/.codex``).

Evidence: formats.md §3 (Codex's own Rust source: ``codex-rs/rollout``, ``codex-rs/protocol``
``models.rs``, the contextual-user-message markers; confidence S F R), checked against the real
sanitized rollouts in shared/peer-fixtures/madshn__localpush (six files, 4,760 lines, with the
upstream author's per-session stats), the jazzyalex shape collection and portable-resume.

Layout handled:
- ``sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl``: the live store, append-only
  JSONL, read incrementally (container "jsonl").
- the same name + ``.zst`` (container "jsonl.zst", whole-file zstd, decompressed by etl); when
  both exist Codex reads the plain file, so the ``.zst`` twin is skipped. A ``.zst`` that is not
  a zstd stream is quarantined by etl as one unreadable container.
- ``archived_sessions/`` (flat or dated), same names.
- legacy whole-file ``rollout-*.json`` from the TypeScript Codex,
  ``{"session": {...}, "items": [ResponseItem, ...]}`` (container "json"): ``to_lines`` yields
  one envelope line per item, ``{"type": "session_meta", ...}`` first, so the SQL reads it like
  the JSONL format.
- the early Rust JSONL without envelope (a header ``{"id", "timestamp", ...}``, bare
  ResponseItems, ``{"record_type": "state"}`` fillers) is recognised by the SQL.

The session id is the thread id, taken from the file name (it equals ``session_meta.id``); a
file not named ``rollout-…-<uuid>`` uses its stem. ``state_N.sqlite``, ``session_index.jsonl``
and ``history.jsonl`` are not read: Codex builds them *from* the rollouts (the state DB "mirrors
rollout metadata"), they hold no turns, and a thread rename is also written into the rollout as
an ``event_msg`` ``thread_name_updated`` record, which is kept (kind 'metadata').

Parsing is the SQL in ``sql/extract/codex__*.sql``; its header says how the double-written
text (``response_item`` vs ``event_msg``) and the repeated token counts are deduplicated.

Known limits: a forked thread's rollout starts with a copy of its parent's items (Codex reloads
them as the fork's history), so those records, token counts included, appear in both sessions;
the fork's ``parent_session_id`` says where they came from. A token count whose model output
lies in the previous ingest batch (a read that falls in the milliseconds between the two) is
not counted.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "codex"
TITLE = "Codex CLI"
ENV_VARS = ("CODEX_HOME",)
# every line becomes one row of the records SQL (every record type is kept), so lines that
# open with '{' are parsed without a check first (adapters/base.py)
EXTRACT = Extract(records="extract/codex__records", blocks="extract/codex__blocks", one_parsed_row_per_line=True,
                  context="extract/codex__context")

#: The folders of a Codex home that hold rollouts.
STORE_DIRS = ("sessions", "archived_sessions")
SUFFIXES = ((".jsonl.zst", "jsonl.zst"), (".jsonl", "jsonl"), (".json", "json"))
_THREAD_ID = re.compile(
    r"-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$CODEX_HOME`` when set, then ``~/.codex`` (Codex's default on Linux and macOS)."""
    roots: list[Path] = []
    if env.get("CODEX_HOME"):
        roots.append(Path(env["CODEX_HOME"]).expanduser())
    roots.append(home / ".codex")
    return roots


def resolve_root(path: Path) -> Path:
    """Accept a Codex home (holding ``sessions/`` or ``archived_sessions/``), either of those
    folders or any folder below them, or a single rollout file."""
    if path.is_file():
        if _split_name(path.name) is None:
            raise RootError(f"{path} is not a Codex rollout (.jsonl, .jsonl.zst or .json)")
        return path
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if any((path / d).is_dir() for d in STORE_DIRS) or any(path.glob("state_*.sqlite")):
        return path
    if next(_rollouts(path), None) is not None:
        return path
    raise RootError(f"{path} holds no Codex rollouts (no sessions/ or rollout-* files)")


def discover(root: Path) -> Iterator[SourceFile]:
    """Every rollout under ``root`` (its ``sessions/`` and ``archived_sessions/`` when it is a
    Codex home), classified by name only; symlinks are not followed."""
    if root.is_file():
        sf = _classify(root, root.parent)
        if sf is not None:
            yield sf
        return
    tops = [root / d for d in STORE_DIRS if (root / d).is_dir()] or [root]
    for top in tops:
        for path in _rollouts(top):
            sf = _classify(path, root)
            if sf is not None:
                yield sf


def _rollouts(top: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        folder = Path(dirpath)
        dirnames.sort()
        names = set(filenames)
        for name in sorted(filenames):
            if not name.startswith("rollout-") or _split_name(name) is None:
                continue
            if name.endswith(".jsonl.zst") and name[: -len(".zst")] in names:
                continue  # Codex prefers the plain file when both exist
            yield folder / name


def _split_name(name: str) -> tuple[str, str] | None:
    """(name without extension, container) for a rollout file name, else None."""
    for suffix, container in SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], container
    return None


def _classify(path: Path, root: Path) -> SourceFile | None:
    split = _split_name(path.name)
    if split is None:
        return None
    base, container = split
    m = _THREAD_ID.search(base)
    session = m.group(1).lower() if m else base
    return SourceFile(NAME, path, root, session_hint=session, container=container)


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """Lines of a compressed rollout (``.jsonl.zst``: the decompressed JSONL), or of a legacy
    whole-file rollout (``.json``): the session header as a
    ``session_meta`` envelope, then one ``response_item`` envelope per item, in file order.

    The whole document is parsed before anything is yielded, so a damaged file becomes one
    quarantined container and never a partial session.
    """
    if file.container == "jsonl.zst":
        yield from _zstd_lines(copy)
        return
    if file.container != "json":
        raise ValueError(f"no reader for container {file.container!r}")
    with open(copy, "rb") as fh:
        doc = json.loads(fh.read().decode("utf-8"))
    if not isinstance(doc, dict) or not (isinstance(doc.get("session"), dict) or isinstance(doc.get("items"), list)):
        raise ValueError("not a Codex rollout document: expected {\"session\": {...}, \"items\": [...]}")
    out: list[bytes] = []
    session = doc.get("session")
    if isinstance(session, dict):
        out.append(_dump({"timestamp": session.get("timestamp"), "type": "session_meta", "payload": session}))
    items = doc.get("items")
    for item in items if isinstance(items, list) else []:
        out.append(_dump({"type": "response_item", "payload": item}))
    yield from out


def _zstd_lines(copy: Path, chunk: int = 1 << 20) -> Iterator[bytes]:
    """The non-blank lines of a zstd-compressed rollout (one or more frames).

    A stream that ends inside a frame raises, so a truncated file is reported as such rather
    than loading a half-written last line.
    """
    import zstandard

    dctx = zstandard.ZstdDecompressor()
    obj, fed, carry = dctx.decompressobj(), False, b""
    with open(copy, "rb") as fh:
        while data := fh.read(chunk):
            while data:
                out = obj.decompress(data)
                fed = True
                data = b""
                if obj.eof:
                    data, obj, fed = obj.unused_data, dctx.decompressobj(), False
                carry += out
                *lines, carry = carry.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield line.rstrip(b"\r")
    if fed:
        raise ValueError("truncated zstd stream: the last frame is incomplete")
    if carry.strip():
        yield carry.rstrip(b"\r")


def _dump(obj: dict) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
