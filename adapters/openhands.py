"""OpenHands: one JSON file per event, in a folder per conversation.

Evidence followed (formats.md §20, confidence S F; the H items checked in the agent's own
source as stored in the search index):
- V1 (OpenHands CLI and agent-server on OpenHands/software-agent-sdk, 2025-Q4 on):
  ``<conversations>/<conversation id hex32>/base_state.json`` and
  ``events/event-<index>-<event id>.json``. ``openhands_cli/locations.py`` puts the folder at
  ``~/.openhands/conversations`` and a later version reads ``$OPENHANDS_PERSISTENCE_DIR``
  (default ``~/.openhands``) and ``$OPENHANDS_CONVERSATIONS_DIR`` (default
  ``<persistence>/conversations``); ``conversations/store/local.py`` names a new conversation
  ``uuid4().hex`` and lists events by ``glob("event-*.json")`` in sorted order.
  ``sdk/conversation/persistence_const.py``: the index is zero-padded to at least 5 digits and
  grows past 99999 (so files are ordered by the number, not the name); early SDK builds wrote
  ``event-<index>.json`` without the id, and the portable-resume samples use 8 digits without
  it: every ``event-<digits>[-<id>].json`` is read. Sub-conversations of the task/delegate
  tools live in ``<conversation>/subagents/<hex>/`` (a third-party reader's notes): they are
  sessions whose parent is the enclosing conversation.
- ``base_state.json`` (``ConversationState``, rewritten in place): ``agent.llm.model``,
  ``workspace.working_dir`` (``workspace.path`` in the franken_agent_detection sample) and
  ``stats.usage_to_metrics.<usage id>.accumulated_token_usage`` (session totals). It becomes
  the session's metadata record (model, cwd, and the token totals: events carry none).
- Event shapes (``sdk/event/*.py``): ``SystemPromptEvent``, ``MessageEvent`` (``source``,
  ``llm_message{role, content[], reasoning_content, thinking_blocks}``, ``sender`` when another
  agent wrote it, ``extended_content`` = context the SDK appended, not shown as text),
  ``ActionEvent`` (``thought[]``, ``reasoning_content``, ``tool_name``, ``tool_call_id``,
  ``tool_call{id, name, arguments: JSON text}``, ``action{kind, …}``; a ``FinishAction``'s
  ``message`` is the final reply), ``ObservationEvent`` (``tool_call_id``, ``action_id``,
  ``observation{content[], is_error, exit_code?}``), ``UserRejectObservation``
  (``rejection_reason``), ``AgentErrorEvent`` (``error``; both answer a tool call),
  ``Condensation`` (``forgotten_event_ids``, ``summary``), ``CondensationSummaryEvent``,
  ``CondensationRequest``, ``ConversationStateUpdateEvent``, ``PauseEvent``,
  ``InterruptEvent``, ``TokenEvent`` (token ids, not counts), ``HookExecutionEvent``,
  ``LLMCompletionLogEvent``, ``ACPToolCallEvent``. Tool call and result share
  ``tool_call_id``.
- Timestamps: ``Event.timestamp`` is ``datetime.now().isoformat()`` (``sdk/event/base.py``), a
  naive wall-clock time of the machine that ran the agent. It is stored as written, read as
  UTC (franken_agent_detection does the same); on a machine not on UTC, ``timestamp`` is off
  by its UTC offset, ``timestamp_raw`` keeps the text.
- V0 (legacy OpenHands server/GUI, 2024-2025; no public sample, own fixture):
  ``<file store, default ~/.openhands>/sessions/<sid>/events/<id>.json`` and
  ``metadata.json`` (``storage/locations.py``; ``users/<uid>/conversations/<sid>/`` when
  multi-user; ``file_store_path`` defaults to ``~/.openhands`` in ``openhands_config.py`` and
  is set by ``$FILE_STORE_PATH``). Event: ``{id:int, timestamp, source, message, cause,
  action|observation, args|extras, content, tool_call_metadata{function_name, tool_call_id,
  model_response}, llm_metrics}``; an observation's ``cause`` is its action's id.
  ``event_cache/`` pages repeat events and the ``*.pkl`` pickles are never opened.

Files are told apart by name only: ``event-<n>[-<id>].json`` is V1, ``<n>.json`` in an
``events/`` folder is V0. Every file is one record (container "json"); parsing is
``sql/extract/openhands__*.sql``. The session id is the conversation folder's name, read from
the path by the SQL; only ``base_state.json``/``metadata.json`` carry it as
``session_hint``, so an event file the agent deletes (a rolled-back turn) stays archived
rather than being hidden behind its still-live siblings.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "openhands"
TITLE = "OpenHands"
ENV_VARS = ("OPENHANDS_CONVERSATIONS_DIR", "OPENHANDS_PERSISTENCE_DIR", "FILE_STORE_PATH")
EXTRACT = Extract(records="extract/openhands__records", blocks="extract/normalized__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True

V1_EVENT = re.compile(r"^event-(\d+)(?:-[^/]+)?\.json$")
V0_EVENT = re.compile(r"^(\d+)\.json$")
STORE_DIRS = ("conversations", "sessions", "users")
NOT_READ = {"event_cache", "observations", "bash_events", "skills", "microagents", "cache", "logs"}


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$OPENHANDS_CONVERSATIONS_DIR``, ``$OPENHANDS_PERSISTENCE_DIR``, the V0 server's
    ``$FILE_STORE_PATH``, then ``~/.openhands`` (which holds both ``conversations/`` and the
    V0 ``sessions/``)."""
    roots: list[Path] = []
    for var in ENV_VARS:
        if env.get(var):
            roots.append(Path(env[var]).expanduser())
    roots.append(home / ".openhands")
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept the persistence folder (``~/.openhands``), a ``conversations/`` or V0
    ``sessions/`` folder, one conversation folder, or a single event file."""
    if path.is_file():
        if _file_role(path) is None:
            raise RootError(f"{path} is not an OpenHands event, base_state.json or metadata.json file")
        return path
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if _is_conversation(path) or any((path / d).is_dir() for d in STORE_DIRS):
        return path
    try:
        if any(e.is_dir(follow_symlinks=False) and _is_conversation(Path(e.path)) for e in os.scandir(path)):
            return path
    except OSError:
        pass
    raise RootError(f"{path} holds no OpenHands conversations (no conversations/, sessions/ or events/)")


def _is_conversation(folder: Path) -> bool:
    return (folder / "events").is_dir() or (folder / "base_state.json").is_file()


def _file_role(path: Path) -> str | None:
    """What a file is, from its name and folder: v1_event, v0_event, base_state, metadata."""
    name = path.name
    if path.parent.name == "events":
        if V1_EVENT.match(name):
            return "v1_event"
        if V0_EVENT.match(name):
            return "v0_event"
    if name == "base_state.json":
        return "base_state"
    if name == "metadata.json":
        return "metadata"
    return None


def _hints(conversation: Path) -> tuple[str, str | None]:
    """A conversation's id (its folder name) and, for a sub-conversation under
    ``<parent>/subagents/``, its parent's id."""
    if conversation.parent.name == "subagents":
        return conversation.name, conversation.parent.parent.name
    return conversation.name, None


def discover(root: Path) -> Iterator[SourceFile]:
    """Every event file and conversation metadata file under ``root``, by name only; event
    files in the order of their index. Symlinks are not followed."""
    if root.is_file():
        yield _classify(root, root.parent)
        return
    tops = [root / d for d in STORE_DIRS if (root / d).is_dir()] or [root]
    for top in tops:
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            here = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames if d not in NOT_READ)
            if here.name == "events":
                yield from _events(here, filenames, root)
                continue
            if "base_state.json" in filenames:
                yield _classify(here / "base_state.json", root)
            if "metadata.json" in filenames and "events" in dirnames:
                yield _classify(here / "metadata.json", root)


def _events(folder: Path, filenames: list[str], root: Path) -> Iterator[SourceFile]:
    numbered = []
    for name in filenames:
        m = V1_EVENT.match(name) or V0_EVENT.match(name)
        if m:
            numbered.append((int(m.group(1)), name))
    for _n, name in sorted(numbered):
        yield _classify(folder / name, root)


def _classify(path: Path, root: Path) -> SourceFile:
    role = _file_role(path)
    if role in ("v1_event", "v0_event"):
        _session, parent = _hints(path.parent.parent)
        return SourceFile(NAME, path, root, session_hint=None, parent_session_hint=parent, container="json")
    session, parent = _hints(path.parent)
    return SourceFile(NAME, path, root, session_hint=session, parent_session_hint=parent, container="json")
