"""Cline (cline/cline): the VS Code extension's task folders and the Cline SDK/CLI sessions.

Evidence followed (formats.md §9, confidence S F), checked in Cline's own source as stored in
the search index and against the vendor fixtures in shared/peer-fixtures/cline__cline and the
portable-resume cases:
- Where: VS Code keeps the extension's storage in
  ``<user data>/User/globalStorage/saoudrizwan.claude-dev`` (``~/.config/Code`` on Linux,
  ``~/Library/Application Support/Code`` on macOS; the same for Code - Insiders, VSCodium,
  Cursor, Windsurf; ``~/.vscode-server/data`` in remote windows). JetBrains, the standalone
  host and the CLI use ``~/.cline/data`` as that storage (``CLINE_DATA_DIR``, else
  ``$CLINE_DIR/data``, as Cline's storage context resolves it). ``hosts/vscode/
  vscode-to-file-migration.ts`` says tasks are *not* migrated between the two, so a task lives
  in exactly one of them.
- Task folder (``core/storage/disk.ts`` ``GlobalFileNames``): ``tasks/<taskId>/
  api_conversation_history.json`` (``ClineStorageMessage[]``: Anthropic MessageParam, plus
  ``id``/``ts``/``modelInfo{modelId,providerId,mode}``/``metrics`` in newer builds; blocks may
  name the call id ``function_id``), ``ui_messages.json`` (``ClineMessage[]``; the first
  builds called it ``claude_messages.json``), ``task_metadata.json`` (``files_in_context``,
  ``model_usage``, ``environment_history``) and the index ``state/taskHistory.json``
  (HistoryItem[]: task, ``cwdOnTaskInitialization``, ``modelId``…). ``context_history.json``,
  ``settings.json`` and ``checkpoints/`` are not read.
- SDK/CLI store (``sdk/packages/core/src/services/storage/sqlite-session-store.ts`` and the
  vendor fixtures): ``sessions/<id>/<id>.json`` (manifest: cwd, model, started_at,
  ``metadata.title``, ``parent_session_id`` for subagents, ``metadata.fork``) and
  ``sessions/<id>/<id>.messages.json`` (messages with ``id``, ``ts``, ``metrics``,
  ``modelInfo{id,provider,family}``; a compaction rewrites the list and marks the summary
  message ``metadata.kind`` "compaction"/"compaction_summary"). ``db/sessions.db`` is an index
  of the manifests and is not read (in portable-resume's s-cl-02 the parent link exists only
  there, so that child has no parent here).

Decisions: the API history is the transcript (one message per element, tool_use/tool_result
blocks as Claude Code's); the UI messages are kept as bookkeeping rows for their timestamps,
the task title (``say: "task"``) and token counts (``api_req_started``), never as messages.
Older builds store no ``ts`` in the API history, so those messages have no timestamp (the
session's start and end still come from the UI rows). Calls written as XML in the text (before
native tool calling) are recognised and linked to their ``[tool] Result:`` messages; see
adapters/_cline_tasks.py. Session id = the task id (the folder name, ``Date.now()`` at
creation) or the SDK session id. Parsing is ``sql/extract/cline_family__*.sql``, shared with
Roo Code and Kilo Code.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters import _cline_tasks as tasks
from convarch.adapters.base import Extract, SourceFile

NAME = "cline"
TITLE = "Cline"
ENV_VARS = ("CLINE_DATA_DIR", "CLINE_DIR")
EXTRACT = Extract(records="extract/cline_family__records", blocks="extract/cline_family__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True
EXTENSION_ID = "saoudrizwan.claude-dev"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """Cline's data folder (``$CLINE_DATA_DIR``, ``$CLINE_DIR/data``, ``~/.cline/data``), then
    the extension's storage in every VS Code build."""
    roots: list[Path] = []
    if env.get("CLINE_DATA_DIR"):
        roots.append(Path(env["CLINE_DATA_DIR"]).expanduser())
    if env.get("CLINE_DIR"):
        roots.append(Path(env["CLINE_DIR"]).expanduser() / "data")
    roots.append(home / ".cline" / "data")
    roots.extend(tasks.vscode_storage_dirs(env, home, EXTENSION_ID))
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept Cline's data folder or ``~/.cline``, the extension's storage folder (or a VS Code
    user-data, ``User`` or ``globalStorage`` folder above it), a ``tasks``/``sessions`` folder,
    one task or session folder, or a single JSON file of one."""
    return tasks.resolve_store(path, (EXTENSION_ID,), data_dirs=("data",))


def discover(root: Path) -> Iterator[SourceFile]:
    """Every task and session file under ``root``, by path only; symlinks are not followed."""
    if root.is_file():
        yield tasks.single(root, NAME)
        return
    yield from tasks.walk(root, NAME)


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    return tasks.json_lines(copy, file)
