"""Pi (badlogic/pi-mono ``pi`` coding agent): one append-only JSONL tree per session under
``<agent dir>/sessions/--<cwd>--/<timestamp>_<uuid>.jsonl``.

Evidence followed (formats.md §16, confidence S F):
- Where: pi's ``config.ts`` ``getAgentDir()`` is ``$PI_CODING_AGENT_DIR`` (a leading ``~`` is
  expanded) else ``~/.pi/agent``; ``session-manager.ts`` keeps sessions in
  ``<agent dir>/sessions/--<cwd with / \\ : replaced by ->--/`` and names a new file
  ``<ISO time with : and . replaced by ->_<session uuid>.jsonl``. Same on macOS. (ccusage's
  ``PI_AGENT_DIR`` is ccusage's own variable, not pi's.) A session folder moved by the
  ``sessionDir`` setting is not found by default: pass it as ``--root``.
- Format (``session-manager.ts``, ``CURRENT_SESSION_VERSION = 3``): line 1 is the header
  ``{type: "session", version, id, timestamp, cwd, parentSession?}`` (``parentSession`` = the
  path of the session file it was forked from; v1 headers had ``provider``, ``modelId``,
  ``thinkingLevel`` and ``branchedFrom``). Every other line is an entry ``{type, id (8 hex),
  parentId, timestamp}``: ``message`` (an AgentMessage), ``model_change``,
  ``thinking_level_change``, ``compaction{summary, firstKeptEntryId, tokensBefore}``,
  ``branch_summary{fromId, summary}``, ``custom{customType, data}`` (not in the model's
  context), ``custom_message{customType, content, display}`` (in context, sent as a user
  message), ``label{targetId, label}`` and ``session_info{name}`` (the session's display name).
- Versions: v1 is linear (entries without ``id``/``parentId``), v2 adds the tree, v3 renames
  the message role ``hookMessage`` to ``custom``. Pi migrates an old file by rewriting it whole
  when it loads it; etl then reads the rewritten file as a new epoch. Every version is read as
  it stands: a v1 entry simply has no ``message_id``/``parent_id``, and ``hookMessage`` is
  treated like ``custom``.
- AgentMessage roles: ``user`` (content: a string or ``text``/``image{data, mimeType}``
  parts), ``assistant`` (``text``, ``thinking{thinking}``, ``toolCall{id, name, arguments}``;
  ``provider``, ``model``, ``usage{input, output, cacheRead, cacheWrite}``, ``stopReason``,
  ``responseId``, ``timestamp`` in Unix ms), ``toolResult{toolCallId, toolName, content,
  isError}``, ``bashExecution{command, output, exitCode, cancelled}`` (a shell command the
  person ran with ``!``), ``custom``/``hookMessage`` (extension input), ``branchSummary`` and
  ``compactionSummary``.
- Tree: pi's context is the ``parentId`` walk from the last entry; a ``compaction`` on that
  path stands for everything before ``firstKeptEntryId``. Abandoned branches stay in the
  file; every line is kept as a row with its ``id``/``parentId`` so the live path can be
  rebuilt.

Mapping (``sql/extract/pi__*.sql``): message entries are messages (``toolResult`` is role
'user', kind 'tool_result'; ``bashExecution`` a user prompt with harness_kind 'shell_escape'
and one ``shell_command`` block; extension messages harness_kind 'custom_message');
``custom_message`` entries likewise; ``compaction`` is a 'system' ``compact_boundary`` whose
text is the summary (``is_compact_summary``); ``branch_summary`` a 'system' message; header,
``model_change`` and ``session_info`` are 'metadata' (a ``session_info`` name is the session
title); other entries are bookkeeping with their own type as kind. A tool call without an
``id`` (seen in stripped samples) gets ``<entry id or line>:<n>`` so it still counts as a call.

The session id is the uuid in the file name (the header's ``id``; pi writes both alike), or
the file stem for a file named otherwise. The parent session is the uuid in the header's
``parentSession`` path.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "pi"
TITLE = "Pi"
ENV_VARS = ("PI_CODING_AGENT_DIR",)
EXTRACT = Extract(records="extract/pi__records", blocks="extract/pi__blocks")

_SESSION_FILE = re.compile(
    r"_([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")


def _expand(value: str, home: Path) -> Path:
    """pi's own ``~`` expansion of ``PI_CODING_AGENT_DIR`` (``~`` and ``~/…`` only)."""
    if value == "~":
        return home
    if value.startswith("~/"):
        return home / value[2:]
    return Path(value)


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$PI_CODING_AGENT_DIR`` when set, then ``~/.pi/agent``."""
    roots: list[Path] = []
    if env.get("PI_CODING_AGENT_DIR"):
        roots.append(_expand(env["PI_CODING_AGENT_DIR"], home))
    roots.append(home / ".pi" / "agent")
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept the agent dir (holding ``sessions/``), ``sessions/`` itself, one
    ``--<cwd>--`` folder, or a single session file."""
    if path.is_file():
        if path.suffix != ".jsonl":
            raise RootError(f"{path} is not a .jsonl session file")
        return path
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if (path / "sessions").is_dir():
        return path / "sessions"
    if next(_sessions(path), None) is not None:
        return path
    raise RootError(f"{path} holds no pi sessions (no sessions/ folder or .jsonl files)")


def discover(root: Path) -> Iterator[SourceFile]:
    """Every ``.jsonl`` session under ``root``; symlinks are not followed."""
    if root.is_file():
        yield _classify(root, root.parent)
        return
    for path in _sessions(root):
        yield _classify(path, root)


def _sessions(top: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        folder = Path(dirpath)
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".jsonl"):
                yield folder / name


def _classify(path: Path, root: Path) -> SourceFile:
    m = _SESSION_FILE.search(path.stem)
    return SourceFile(NAME, path, root, session_hint=m.group(1).lower() if m else path.stem)
