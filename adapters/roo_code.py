"""Roo Code (RooCodeInc/Roo-Code, a fork of Cline): the VS Code extension's task folders.

Evidence followed (formats.md §10, confidence S; no public sample, so the fixtures under
fixtures/roo_code are written from the source), read in Roo Code's own source as stored in the
search index:
- Where: ``<user data>/User/globalStorage/rooveterinaryinc.roo-cline/tasks/<taskId>/`` for
  every VS Code build (as Cline, see adapters/cline.py). Roo's "custom storage path" setting
  (``utils/storage.ts`` ``getStorageBasePath``) can move ``tasks/`` elsewhere; it is a VS
  Code setting, not an environment variable, so such a folder is read with ``--root``.
- Files (``src/shared/globalFileNames.ts``): ``api_conversation_history.json``,
  ``ui_messages.json``, ``task_metadata.json``, ``history_item.json`` (one HistoryItem per
  task since 2026, ``core/task-persistence/TaskHistoryStore.ts``; earlier builds kept the
  history in VS Code's globalState, which is not a file of this store) and
  ``tasks/_index.json`` (a cache of the history items, not read).
- API history (``core/task-persistence/apiMessages.ts``): the legacy array of Anthropic
  messages with ``ts``, ``isSummary``/``condenseId``/``condenseParent`` (non-destructive
  condense: replaced messages stay, marked), ``truncationParent``, standalone ``{"type":
  "reasoning", "encrypted_content"}`` items; or (``rooMessage.ts``, ``ROO_MESSAGE_VERSION``
  2) ``{"version": 2, "messages": [...]}`` with AI SDK parts (``tool-call``/``tool-result``
  with ``toolCallId``, ``reasoning``, ``role: "tool"`` messages for results).
- HistoryItem (``packages/types/src/history.ts``): ``title``, ``task``, ``workspace`` (the
  cwd), ``mode``, ``parentTaskId``/``rootTaskId``/``childIds`` (the subtask tree: a subtask's
  parent session is its ``parentTaskId``), token totals (not counted: the UI rows carry the
  per-request counts).

Parsing is shared with Cline and Kilo Code (adapters/_cline_tasks.py and
``sql/extract/cline_family__*.sql``): one message per API-history element, UI messages as
bookkeeping rows (timestamps, ``api_req_started`` tokens), XML-era tool calls linked to their
results. Messages a condense replaced keep their rows (their ``condenseParent`` stays in
``raw``); the summary is a compact summary. Roo's first UI message is ``say: "text"`` (not
Cline's ``"task"``), so the title comes from ``history_item.json``, else the first prompt.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters import _cline_tasks as tasks
from convarch.adapters.base import Extract, SourceFile

NAME = "roo_code"
TITLE = "Roo Code"
ENV_VARS: tuple[str, ...] = ()
EXTRACT = Extract(records="extract/cline_family__records", blocks="extract/cline_family__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True
EXTENSION_ID = "rooveterinaryinc.roo-cline"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """The extension's storage in every VS Code build."""
    return tasks.vscode_storage_dirs(env, home, EXTENSION_ID)


def resolve_root(path: Path) -> Path:
    """Accept the extension's storage folder (or a VS Code user-data, ``User`` or
    ``globalStorage`` folder above it), its ``tasks`` folder (also a custom storage path),
    one task folder, or a single JSON file of a task."""
    return tasks.resolve_store(path, (EXTENSION_ID,))


def discover(root: Path) -> Iterator[SourceFile]:
    """Every task file under ``root``, by path only; symlinks are not followed."""
    if root.is_file():
        yield tasks.single(root, NAME)
        return
    yield from tasks.walk(root, NAME)


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    return tasks.json_lines(copy, file)
