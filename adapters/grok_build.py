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
  hooks, status) do not end it. A later line changes what an earlier one means (a chunk adds
  to its run's first line), so the file is read whole whenever it changes (container "json")
  and ``to_lines`` replays it: each physical line comes out wrapped as ``{"cv": {offset, head,
  body, images, model}, "line": <the line>}``, a run's first line with the run's text, images
  and model. The SQL then reads each line on its own (``LINES_STAND_ALONE``): when the log
  grows, the lines before the first one whose text or facts changed (usually the current
  run's first chunk) stay where they were loaded and only the rest loads again.
  ``tool_call{toolCallId, title, kind, status, rawInput, content[]}`` is a
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

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from convarch.adapters import _replayed as replayed
from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "grok_build"
TITLE = "Grok Build"
ENV_VARS = ("GROK_HOME",)
EXTRACT = Extract(records="extract/grok_build__records", blocks="extract/normalized__blocks")
LINES_STAND_ALONE = True

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
    """``updates.jsonl``: every physical line wrapped with what the replay of the runs found
    (see the module docstring; a line that is not a JSON object is passed through unchanged and
    quarantined); ``chat_history.jsonl``: every physical line unchanged; a ``.json`` document:
    itself, as one line."""
    data = copy.read_bytes()
    if file.path.suffix == ".json":
        body = data[len(replayed.BOM):] if data.startswith(replayed.BOM) else data
        yield body.replace(b"\r", b" ").replace(b"\n", b" ")
        return
    spans = replayed.line_spans(data)
    if file.path.stem == "chat_history":
        for start, end in spans:
            yield replayed.line_bytes(start, data[start:end])
        return
    facts = _runs(replayed.line_text(start, data[start:end]) for start, end in spans)
    for (start, end), cv in zip(spans, facts):
        if cv is None:
            yield replayed.line_bytes(start, data[start:end])
        else:
            yield replayed.wrap({"offset": start, **cv}, replayed.line_text(start, data[start:end]))


CHUNKS = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")
#: the kinds whose line ends the run before it (other lines, plan or status, do not)
ENDS_RUN = (*CHUNKS, "tool_call", "tool_call_update")


def _runs(lines: Iterable[str | None]) -> list[dict | None]:
    """Each line's facts: whether it starts a run of chunks (a message) and, for a run's first
    line, the run's text, images and model; None for a line that is not a JSON object. A run
    starts at a chunk whose kind, prompt index or hiddenness differs from the last line that
    bore a message (a chunk, a tool call or its update)."""
    facts: list[dict | None] = []
    heads: list[dict] = []
    last = None                                   # (kind, prompt, hidden) of the last run-ending line
    for text in lines:
        try:
            value = json.loads(text) if text is not None else None
        except ValueError:
            value = None
        if not isinstance(value, dict):
            facts.append(None)
            continue
        fact: dict = {"head": False}
        facts.append(fact)
        update = _update(value)
        if update is None:
            continue
        kind = update.get("sessionUpdate") if isinstance(update.get("sessionUpdate"), str) else None
        meta = update.get("_meta") if isinstance(update.get("_meta"), dict) else {}
        prompt = meta.get("promptIndex")
        prompt = prompt if isinstance(prompt, int) and not isinstance(prompt, bool) else -1
        this = (kind, prompt, update.get("encrypted_content") is not None)
        if kind in CHUNKS:
            if this != last:
                fact.update(head=True, body=None, images=None, model=None)
                heads.append({"fact": fact, "texts": []})
            if heads:
                _add_chunk(heads[-1], update, meta)
        if kind in ENDS_RUN:
            last = this
    for run in heads:
        run["fact"]["body"] = "".join(run["texts"]) or None
    return facts


def _update(value: dict) -> dict | None:
    """The ACP update a line carries: ``params.update``, ``update``, or the line itself."""
    params = value.get("params")
    for update in (params.get("update") if isinstance(params, dict) else None, value.get("update")):
        if update is not None:
            return update if isinstance(update, dict) else None
    return value if value.get("sessionUpdate") is not None else None


def _add_chunk(run: dict, update: dict, meta: dict) -> None:
    fact = run["fact"]
    content = update.get("content")
    if isinstance(content, dict):
        if content.get("type") == "text" and isinstance(content.get("text"), str):
            run["texts"].append(content["text"])
        elif content.get("type") == "image":
            data = content.get("data")
            fact["images"] = [*(fact["images"] or []), {
                "type": "image", "media_type": content.get("mimeType"),
                "data_chars": len(data.encode("utf-8")) if isinstance(data, str) else None}]
    if fact["model"] is None and isinstance(meta.get("modelId"), str):
        fact["model"] = meta["modelId"]
