"""Kimi Code (Moonshot AI, 2026; successor of Kimi CLI): one wire log per agent of a session
under ``~/.kimi-code/sessions/``.

Evidence (confidence R F: Kimi Code's source is not in the search index; the
``MoonshotAI/kimi-code`` repository stored there is an unrelated bot): formats.md §17B; the
samples in shared/peer-fixtures/jazzyalex__agent-sessions (``kimi/``: trimmed real wire logs
of protocol 1.4 from a macOS install, a main session, a session with tool calls and a
subagent, and two ``state.json``) and shared/peer-fixtures/portable-resume (``kimi/s-kim-01``,
synthetic, protocol 1.1 with epoch-second times); portable-resume's own reader as summarised
in research/portable-resume.md (``KIMI_CODE_HOME``, ``session_index.jsonl`` being an index
with tombstones). Every record type named below was seen in those samples.

Layout handled (the store root is ``$KIMI_CODE_HOME``, else ``~/.kimi-code``):
- ``sessions/<wd_<name>_<hash>>/session_<uuid>/agents/<agentId>/wire.jsonl``: the wire log of
  one agent, append-only JSONL. ``main`` is the session itself (session id = the uuid, the
  ``session_`` prefix dropped; portable-resume's folders have no prefix); any other agent
  (``agent-0``...) is a subagent session ``<uuid>/<agentId>`` whose parent is the session
  (``state.json`` may name another agent as parent; that nesting is not followed).
- ``sessions/.../<session>/wire.jsonl`` directly in the session folder is read as the main
  agent too.
- ``sessions/.../<session>/state.json``: one whole-document record (container "json"): the
  title (``customTitle``, else ``title``) as a metadata record, ``workDir`` as cwd. A
  ``state.json`` given on its own takes its session id from ``agents.main.homedir``.
- Not read: ``session_index.jsonl`` (an index: locations and deletion tombstones, no turns),
  and any other ``.jsonl`` inside the tree. A folder of loose ``*.jsonl`` wire logs (and
  ``*state.json``) given as ``--root`` is read too, each file directly in it its own session.

Wire lines are ``{type, ..., time, agentId?}`` (``time`` in epoch ms; epoch seconds in
protocol 1.1). One row per line (parsing is ``sql/extract/kimi_code__*.sql``):
- messages: ``context.append_message`` (what enters the model's context: user input and its
  steering, injected reminders, system messages), and the loop events
  ``context.append_loop_event`` ``content.part`` (assistant ``text``, or ``think`` = thinking),
  ``tool.call`` (tool_use) and ``tool.result`` (tool_result, role 'user'); calls and results
  link by ``toolCallId``.
- ``turn.prompt`` / ``turn.steer`` repeat input that is appended to the context as a message
  too, so they are bookkeeping (kinds 'turn_prompt', 'turn_steer'); so are step begin/end,
  config, permission, plan-mode, tooling and LLM-request records (kind = their type in
  snake_case). A type nobody knows is kind 'unknown'.
- harness input (``harness_kind``): a user message whose ``origin.kind`` is 'injection' (plan
  mode, todo reminders: 'system_reminder' when it is a ``<system-reminder>``), or another
  non-human origin; a subagent's task (``system_trigger``/``subagent``) is its request.
- ``context.apply_compaction``: kind 'compact_boundary', role 'system', the summary as text.
- tokens: ``usage.record`` (``inputOther`` = input without cache, ``inputCacheRead``,
  ``inputCacheCreation``, ``output``), kind 'token_count'; ``step.end`` repeats the same
  numbers and is not counted. Model: ``modelAlias`` of ``config.update``/``profile.bind``/
  ``llm.request`` and ``usage.record.model``. cwd: ``config.update.cwd``,
  ``profile.bind.environmentDisclosure.cwd``, ``state.json`` ``workDir``.

Not covered (no sample shows them): ``toolCalls`` inside an appended assistant message (kept
in ``raw``; only loop events make tool blocks), images in wire content beyond their URL.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "kimi_code"
TITLE = "Kimi Code"
ENV_VARS = ("KIMI_CODE_HOME",)
EXTRACT = Extract(records="extract/kimi_code__records", blocks="extract/kimi_code__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True

INDEX = "session_index.jsonl"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$KIMI_CODE_HOME`` (the ``.kimi-code`` folder itself) when set, then ``~/.kimi-code``."""
    roots: list[Path] = []
    if env.get("KIMI_CODE_HOME"):
        roots.append(Path(env["KIMI_CODE_HOME"]).expanduser())
    roots.append(home / ".kimi-code")
    return roots


def resolve_root(path: Path) -> Path:
    """Accept the Kimi Code home (holding ``sessions/``), ``sessions/`` itself, a work-dir or
    session folder, or a single wire log or ``state.json``."""
    if path.is_file():
        if path.name == INDEX or not (path.suffix == ".jsonl" or path.name.endswith("state.json")):
            raise RootError(f"{path} is not a Kimi Code wire log (.jsonl) or state.json")
        return path
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if (path / "sessions").is_dir():
        return path / "sessions"
    return path


def discover(root: Path) -> Iterator[SourceFile]:
    """Every wire log and session state under ``root``. Symlinks are not followed."""
    if root.is_file():
        sf = _classify(root)
        if sf is not None:
            yield sf
        return
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        folder = Path(dirpath)
        dirnames.sort()
        for name in sorted(filenames):
            sf = _classify(folder / name, root)
            if sf is not None:
                yield sf


def session_id_of(folder: str) -> str:
    """A session folder's name without Kimi Code's ``session_`` prefix."""
    return folder[len("session_"):] if folder.startswith("session_") and len(folder) > 8 else folder


def _classify(path: Path, root: Path | None = None) -> SourceFile | None:
    name = path.name
    top = root if root is not None else path.parent
    parent = path.parent
    if name.endswith(".jsonl") and name != INDEX:
        # <session>/agents/<agent>/wire.jsonl
        if name == "wire.jsonl" and parent.parent.name == "agents":
            sid = session_id_of(parent.parent.parent.name)
            agent = parent.name
            if agent == "main":
                return SourceFile(NAME, path, top, session_hint=sid)
            return SourceFile(NAME, path, top, session_hint=f"{sid}/{agent}", parent_session_hint=sid)
        if name == "wire.jsonl":
            return SourceFile(NAME, path, top, session_hint=session_id_of(parent.name))
        if root is None or parent == root:
            return SourceFile(NAME, path, top, session_hint=path.stem)  # a loose wire log
        return None
    if name == "state.json" and (parent.parent.parent.name == "sessions" or (parent / "agents").is_dir()):
        return SourceFile(NAME, path, top, session_hint=session_id_of(parent.name), container="json")
    if name.endswith("state.json") and (root is None or parent == root):
        # a state file outside the layout: the session id is read from the file itself
        return SourceFile(NAME, path, top, session_hint=None, container="json")
    return None
