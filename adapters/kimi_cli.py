"""Kimi CLI (MoonshotAI/kimi-cli, Python, 2025-): one folder per session under
``~/.kimi/sessions/<md5 of the work dir>/``.

Evidence (confidence S): formats.md §17A, checked against Kimi CLI's own source as stored in
the search index: ``src/kimi_cli/share.py`` (``$KIMI_SHARE_DIR`` else ``~/.kimi``),
``metadata.py`` (``kimi.json``: ``work_dirs[]{path, last_session_id}``,
``session_to_workdir``; a work dir's sessions live in ``sessions/<md5(path)>``),
``session.py`` (``<session>/context.jsonl`` + ``wire.jsonl``; the flat pre-2025-11 file
``sessions/<md5>/<id>.jsonl`` is renamed into ``<id>/context.jsonl`` on first use),
``session_state.py`` (``state.json``: ``custom_title``, archive flags; a legacy
``metadata.json`` with ``title``), ``soul/context.py`` (context lines are kosong messages plus
``_system_prompt``/``_checkpoint``/``_usage`` control lines; revert, clear and compaction
rotate the file and write a shorter one), ``soul/message.py`` (tool results as role ``tool``,
errors opening with ``<system>ERROR</system>``), ``wire/file.py`` + ``wire/types.py`` +
``wire/__init__.py`` (``wire.jsonl``: a ``metadata`` header, then
``{timestamp: <epoch s float>, message: {type: <WireMessage>, payload}}``; the recorder writes
merged messages, so a streamed answer is one ``ContentPart`` and a call one ``ToolCall``),
``subagents/store.py`` (``<session>/subagents/<agent id>/{context.jsonl, wire.jsonl,
meta.json}``), and ``packages/kosong`` (``message.py``, ``tooling/__init__.py``: the part,
tool-call and tool-result shapes). Samples: shared/peer-fixtures/portable-resume ``kimi/s-kim-02``
(synthetic; its context lines carry an invented ``timestamp`` and one wraps its message in
``message``: both are read). ccusage reads the same ``StatusUpdate.token_usage``.

Which file is the transcript: the wire log when the session has one (it is append-only, it
has every turn with its time, and the context file is only the model's current window,
rewritten on undo, ``/clear`` and compaction); otherwise the context file (sessions from
before the wire log existed; their messages have no time). A context file beside a non-empty
``wire.jsonl`` is not read, nor are rotated context files (``context_<n>.jsonl``: earlier
windows repeating the same messages). Known loss: a pre-wire session resumed by a newer CLI
has both files; only its wire log (the turns after the resume) stays live.

Layout handled (the store root is the share dir):
- ``sessions/<wd>/<sid>/wire.jsonl`` (else ``context.jsonl``): session ``<sid>``;
  ``sessions/<wd>/<sid>.jsonl`` (flat, no folder of that name beside it): session ``<sid>``.
- ``sessions/<wd>/<sid>/state.json`` and legacy ``metadata.json``: one record each, the
  custom title as metadata (``title`` unless "Untitled").
- ``sessions/<wd>/<sid>/subagents/<aid>/wire.jsonl`` (else ``context.jsonl``): subagent
  session ``<sid>/<aid>``, parent ``<sid>``; its ``meta.json``: description as title,
  ``launch_spec.work_dir`` as cwd, ``launch_spec.effective_model`` as model.
- ``kimi.json``: the only place a work dir's path is kept. ``to_lines`` yields one
  ``work_dir`` line per session of each work dir, which gives that session its cwd; the
  sessions of a work dir are found by listing ``sessions/<md5(path)>/`` beside ``kimi.json``
  (names only; this listing is the one place an adapter looks at the live folder, because
  ``kimi.json`` itself does not name them), plus ``session_to_workdir``. Work dirs on a
  non-local KAOS (folder ``<kaos>_<md5>``) are listed the same way.

Records (parsing is ``sql/extract/kimi_cli__records.sql``; blocks share
``kimi_code__blocks.sql``):
- wire: ``TurnBegin`` / ``SteerInput`` are the user's prompts (a ``/command`` is
  'slash_command'); ``ContentPart`` text/think are assistant responses/thinking; ``ToolCall``
  a tool_use (arguments parsed from their JSON string), ``ToolResult`` a tool_result (role
  'user', an error when ``return_value.is_error``); ``StatusUpdate`` with ``token_usage`` is
  kind 'token_count' (``input_other`` = input without cache); ``CompactionEnd`` is
  'compact_boundary'; ``SubagentEvent`` is bookkeeping ('subagent_event': the subagent's own
  wire log holds the same events); the other events are bookkeeping kinds in snake_case.
- context: roles ``user``/``assistant``/``tool``/``system``; ``tool_calls`` become tool_use
  blocks, ``tool`` messages tool_result blocks; user messages Kimi CLI writes itself
  (``<system>CHECKPOINT n</system>``, other ``<system>`` text) are harness input; control
  lines are kinds 'system_prompt', 'checkpoint', 'context_usage'.
Model: not per session in these files (it is ``default_model`` in ``config.toml``), except a
subagent's ``meta.json``.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "kimi_cli"
TITLE = "Kimi CLI"
ENV_VARS = ("KIMI_SHARE_DIR",)
EXTRACT = Extract(records="extract/kimi_cli__records", blocks="extract/kimi_code__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True

METADATA_FILE = "kimi.json"
DOCS = ("state.json", "metadata.json")


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$KIMI_SHARE_DIR`` when set, then ``~/.kimi``."""
    roots: list[Path] = []
    if env.get("KIMI_SHARE_DIR"):
        roots.append(Path(env["KIMI_SHARE_DIR"]).expanduser())
    roots.append(home / ".kimi")
    return roots


def resolve_root(path: Path) -> Path:
    """Accept the share dir (holding ``sessions/`` and ``kimi.json``), ``sessions/``, a work-dir
    or session folder, or a single context or wire file."""
    if path.is_file():
        if path.suffix != ".jsonl":
            raise RootError(f"{path} is not a Kimi CLI context or wire file (.jsonl)")
        return path
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    return path


def discover(root: Path) -> Iterator[SourceFile]:
    """``kimi.json`` and every session file under ``root`` (see the module docstring).
    Symlinks are not followed."""
    if root.is_file():
        yield _single(root)
        return
    if (root / METADATA_FILE).is_file() and not (root / METADATA_FILE).is_symlink():
        yield SourceFile(NAME, root / METADATA_FILE, root, container="json")
    top = root / "sessions" if (root / "sessions").is_dir() else root
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames.sort()
        here = Path(dirpath)
        names = set(filenames)
        for sf in _in_folder(here, names, set(dirnames), root):
            yield sf


def _single(path: Path) -> SourceFile:
    here = path.parent
    if path.name in ("wire.jsonl", "context.jsonl"):
        sid, parent = _session_of(here)
        return SourceFile(NAME, path, here, session_hint=sid, parent_session_hint=parent)
    return SourceFile(NAME, path, here, session_hint=path.stem)


def _session_of(folder: Path) -> tuple[str, str | None]:
    """(session id, parent session id) of a session or subagent folder."""
    if folder.parent.name == "subagents":
        parent = folder.parent.parent.name
        return f"{parent}/{folder.name}", parent
    return folder.name, None


def _in_folder(here: Path, names: set[str], dirs: set[str], root: Path) -> Iterator[SourceFile]:
    transcript = None
    if "wire.jsonl" in names and _size(here / "wire.jsonl") > 0:
        transcript = "wire.jsonl"
    elif "context.jsonl" in names:
        transcript = "context.jsonl"
    if transcript is not None:
        sid, parent = _session_of(here)
        yield SourceFile(NAME, here / transcript, root, session_hint=sid, parent_session_hint=parent)
        docs = DOCS + ("meta.json",) if parent else DOCS
        for doc in docs:
            if doc in names:
                yield SourceFile(NAME, here / doc, root, session_hint=sid, parent_session_hint=parent,
                                 container="json")
        return
    # a work-dir folder: flat legacy context files <sid>.jsonl not yet moved into <sid>/
    for name in sorted(names):
        stem = name[: -len(".jsonl")]
        if name.endswith(".jsonl") and stem not in dirs and here.parent.name == "sessions":
            yield SourceFile(NAME, here / name, root, session_hint=stem)


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """``kimi.json``: one ``work_dir`` line per session of each work dir; any other JSON
    document (state, legacy metadata, a subagent's meta): the document as one line."""
    doc = json.loads(copy.read_bytes().decode("utf-8-sig"))
    if file.path.name != METADATA_FILE:
        yield _dump(doc)
        return
    if not isinstance(doc, dict):
        raise ValueError(f"a JSON {type(doc).__name__}, not Kimi CLI metadata")
    sessions_dir = file.path.parent / "sessions"
    out: dict[str, dict] = {}
    work_dirs = doc.get("work_dirs") if isinstance(doc.get("work_dirs"), list) else []
    for wd in work_dirs:
        if not isinstance(wd, dict) or not isinstance(wd.get("path"), str):
            continue
        path, kaos = wd["path"], wd.get("kaos") or "local"
        digest = hashlib.md5(path.encode("utf-8")).hexdigest()
        folder = digest if kaos == "local" else f"{kaos}_{digest}"
        for sid in _sessions_in(sessions_dir / folder):
            out.setdefault(sid, {"type": "work_dir", "session_id": sid, "work_dir": path, "kaos": kaos,
                                 "folder": folder, "last": sid == wd.get("last_session_id")})
    mapping = doc.get("session_to_workdir")
    if isinstance(mapping, dict):
        for sid, path in mapping.items():
            if isinstance(path, str) and sid not in out:
                out[sid] = {"type": "work_dir", "session_id": sid, "work_dir": path}
    for sid in sorted(out):
        yield _dump(out[sid])


def _sessions_in(folder: Path) -> list[str]:
    """The sessions a work-dir folder holds, by name: sub-folders with a context or wire
    file, and flat ``<sid>.jsonl`` files."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    found = set()
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            if any(os.path.isfile(os.path.join(e.path, n)) for n in ("context.jsonl", "wire.jsonl")):
                found.add(e.name)
        elif e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False):
            found.add(e.name[: -len(".jsonl")])
    return sorted(found)


def _dump(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
