"""xAI Grok Build (the official ``grok`` terminal agent): a folder per session under
``~/.grok/sessions/<percent-encoded cwd>/<session id>/``.

Evidence followed (formats.md §22 A, confidence R F: closed source): franken_agent_detection
``src/connectors/grok.rs`` (its header documents grok 0.2.103: ``$GROK_HOME``, the layout,
``updates.jsonl`` as "the authoritative conversation log that drives /resume" per the CLI's
bundled docs, the envelope ``{timestamp: Unix s, method: session/update | _x.ai/session/update,
params{sessionId, update{sessionUpdate, …}, _meta{eventId, agentTimestampMs}}}``, model and
prompt index riding in ``update._meta``, consecutive chunks of one kind being one message,
``chat_history.jsonl`` as a fallback with ``synthetic_reason`` marking injected input, the
``.cwd`` file for long folder names), the Agent Client Protocol's ``SessionUpdate`` kinds, and
the samples in shared/peer-fixtures (jazzyalex ``agents/grok/``, portable-resume ``grok/``).

Grok Build and the community grok-cli (adapter ``grok_cli``) share ``~/.grok``: this adapter
reads only ``sessions/``, by file name (``updates.jsonl``, ``chat_history.jsonl``,
``summary.json``, ``compaction_checkpoints/*.json``), and never ``grok.db``.

Layout handled (a session folder is any folder holding one of the three session files; one
found inside another session's folder is that session's child, as the jazzyalex sample nests
a subagent; summary.json's ``parent_session_id`` is used when present):
- ``updates.jsonl``: ACP ``session/update`` notifications, one per line. Chunks
  (``user_message_chunk``, ``agent_message_chunk``, ``agent_thought_chunk``) stream one
  message in pieces: the first chunk of a run carries the whole message (role, text joined
  from the run, blocks) and the others stay rows of kind 'chunk' with no role. A run ends at
  a chunk of another kind, a tool call or update, or a new ``promptIndex``; other lines (plan,
  hooks, status) do not end it. Because a later line changes what an earlier one means, the
  file is read whole whenever it changes (container "json"; ``to_lines`` yields every physical
  line unchanged). ``tool_call{toolCallId, title, kind, status, rawInput, content[]}`` is a
  tool_use (named by its ACP ``kind``, else its ``title``); ``tool_call_update`` carrying
  output (``content[]`` or ``rawOutput``) or a failed status is its tool_result (the last one
  wins), otherwise bookkeeping ('tool_progress'). ``session_info_update`` carries the title.
  Timestamps: ``_meta.agentTimestampMs`` (ms), else the envelope's Unix seconds.
- ``chat_history.jsonl`` (the raw model messages: ``system``, ``user`` with
  ``synthetic_reason`` for injected context, ``assistant`` with ``tool_calls[{id, name,
  arguments: JSON text}]`` and ``model_id``, ``tool_result{tool_call_id}``, ``reasoning``
  with ``summary[]``, ``backend_tool_call`` for server-side tools): read only for a session
  without ``updates.jsonl`` (it holds the same conversation; the two share the session hint).
  It is rewritten when the history is compacted, so it is read whole too. It has no
  timestamps.
- ``summary.json``: the session's metadata record: ``generated_title`` (else
  ``session_summary``) as title, ``info.cwd``, ``head_branch``, ``current_model_id``,
  ``created_at`` (ISO text or Unix seconds), ``session_kind: subagent``.
- ``compaction_checkpoints/<id>.json``: one record each (kind 'compaction_checkpoint'); the
  replacement history inside is kept in ``raw``, not turned into messages (it repeats
  earlier turns).
- cwd: ``summary.json``'s ``info.cwd``, else the session folder's parent name decoded when it
  is a percent-encoded absolute path (``%2F…``). Not read: ``plan.json``, ``events.jsonl``,
  ``rewind_points.jsonl``, ``.cwd``, ``prompt_history.jsonl``, ``session_search.sqlite``
  (index and prompt log only).

The session id is the session folder's name. Parsing is ``sql/extract/grok_build__*.sql``.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "grok_build"
TITLE = "Grok Build"
ENV_VARS = ("GROK_HOME",)
EXTRACT = Extract(records="extract/grok_build__records", blocks="extract/normalized__blocks")

SESSION_FILES = ("updates.jsonl", "chat_history.jsonl", "summary.json")
CHECKPOINTS = "compaction_checkpoints"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$GROK_HOME`` when set, then ``~/.grok``."""
    roots: list[Path] = []
    if env.get("GROK_HOME"):
        roots.append(Path(env["GROK_HOME"]).expanduser())
    roots.append(home / ".grok")
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept ``$GROK_HOME`` (its ``sessions/`` is used), ``sessions/`` itself, a cwd group
    folder, one session folder, or a single session file."""
    if path.is_file():
        if path.name in SESSION_FILES or (path.suffix == ".json" and path.parent.name == CHECKPOINTS):
            return path
        raise RootError(f"{path} is not a Grok Build session file (updates.jsonl, chat_history.jsonl, summary.json)")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if (path / "sessions").is_dir():
        return path / "sessions"
    if _is_session(path) or any(_is_session(c) or any(_is_session(g) for g in _subdirs(c)) for c in _subdirs(path)):
        return path
    raise RootError(f"{path} holds no Grok Build sessions (no sessions/ folder)")


def _subdirs(folder: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _is_session(folder: Path) -> bool:
    return any(os.path.lexists(folder / n) for n in SESSION_FILES)


def discover(root: Path) -> Iterator[SourceFile]:
    """Each session folder's ``summary.json``, its ``updates.jsonl`` (else its
    ``chat_history.jsonl``) and its compaction checkpoints. By name only; symlinks are not
    followed."""
    if root.is_file():
        yield _single(root)
        return
    sessions: set[Path] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames.sort()
        if here.name == CHECKPOINTS and here.parent in sessions:
            dirnames[:] = []
            sid, parent = _ids(here.parent, sessions, root)
            for name in sorted(filenames):
                if name.endswith(".json"):
                    yield SourceFile(NAME, here / name, root, parent_session_hint=parent, container="json")
            continue
        names = set(filenames)
        if not names & set(SESSION_FILES):
            continue
        sessions.add(here)
        sid, parent = _ids(here, sessions, root)
        if "summary.json" in names:
            yield SourceFile(NAME, here / "summary.json", root, parent_session_hint=parent, container="json")
        log = "updates.jsonl" if "updates.jsonl" in names else "chat_history.jsonl" if "chat_history.jsonl" in names else None
        if log:
            yield SourceFile(NAME, here / log, root, session_hint=sid, parent_session_hint=parent, container="json")


def _ids(folder: Path, sessions: set[Path], root: Path) -> tuple[str, str | None]:
    """A session's id (its folder name) and the id of the session folder enclosing it."""
    for up in folder.parents:
        if up in sessions:
            return folder.name, up.name
        if up == root:
            break
    return folder.name, None


def _single(path: Path) -> SourceFile:
    if path.parent.name == CHECKPOINTS:
        return SourceFile(NAME, path, path.parent, container="json")
    hint = path.parent.name if path.name != "summary.json" else None
    return SourceFile(NAME, path, path.parent, session_hint=hint, container="json")


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """A ``.jsonl`` log: every physical line unchanged (a line that is not JSON is quarantined
    on its own); a ``.json`` document: itself, as one line."""
    data = copy.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if file.path.suffix == ".json":
        yield data.replace(b"\r", b" ").replace(b"\n", b" ")
        return
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    for raw in parts:
        yield raw[:-1] if raw.endswith(b"\r") else raw
