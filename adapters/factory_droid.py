"""Factory droid (``droid`` CLI): one JSONL transcript per session under ``~/.factory/sessions/``.

Evidence (confidence R F: droid is closed source): formats.md §19; three third-party readers
as stored in the search index, which agree on the shapes read here: ccusage
(``rust/crates/ccusage/src/adapter/droid/``: the ``.settings.json`` token totals),
yigitkonur/cli-continues (``src/parsers/droid.ts`` and ``src/types/schemas.ts``: the line types
``session_start``, ``message``, ``todo_state``, ``compaction_state``, the settings fields, and a
second store folder ``~/.factory/projects/``) and franken_agent_detection's ``factory.rs``
(the slug folders); checked against the samples in
shared/peer-fixtures/jazzyalex__agent-sessions (``droid/session_store_*.jsonl``, trimmed real
sessions and one hand-made drift case). Nothing here was seen in droid's own code.

Layout handled (the store root is ``~/.factory``; droid names no environment override, so
``ENV_VARS`` is empty):
- ``sessions/<cwd-slug>/<session uuid>.jsonl``: one session; the file stem is the session id
  (the ``session_start`` record's ``id`` is not used as a key: hand-made files put other
  values there). Older droid builds wrote ``sessions/<uuid>.jsonl`` without the slug folder;
  both are read.
- ``sessions/.../<uuid>.settings.json`` beside it: one whole-document record (container
  "json") with the session's model, autonomy mode and ``tokenUsage`` (session totals; droid
  writes no per-message usage).
- ``projects/<cwd-slug>/<uuid>.jsonl`` (+ settings), which cli-continues also reads: a file
  there is skipped when a file of the same name exists under ``sessions/`` (the same session
  would count twice).

Records, one row per line (parsing is ``sql/extract/factory_droid__*.sql``):
- ``session_start``: kind 'metadata', its ``sessionTitle`` (else ``title``) in ``text``, its
  ``cwd`` and ``version``.
- ``message``: Claude-style ``{role, content: [text | thinking | tool_use | tool_result]}``
  with ``id``/``parentId`` (the first message's parent is the session id). Calls and results
  link by ``tool_use.id`` = ``tool_result.tool_use_id``. droid injects ``<system-reminder>``
  blocks into the user's first message, sometimes in the same text block as the request: the
  reminders are cut out of ``text`` (the raw line keeps them), and a message that is nothing
  but reminders is harness input (``harness_kind`` 'system_reminder').
- ``compaction_state``: kind 'compact_boundary', role 'system', its ``summaryText`` as text.
- ``todo_state``: kind 'todo_state' (bookkeeping).
- Drift: the ``droid exec --output-format stream-json`` event stream is not the store, but a
  file of it given as ``--root`` loads too: ``system`` (kind 'metadata', with model and cwd),
  ``message`` (top-level ``role``/``text``), ``tool_call`` (``toolCallId`` or ``id``,
  ``toolName``, ``parameters``), ``tool_result`` (``value``; an error when ``isError`` or a
  non-zero ``exitCode``), ``completion`` (the final answer, role 'assistant', with its
  ``usage``) and ``error`` (role 'system'). Epoch-millisecond timestamps are read too.

Not available in the files: git branch, per-message model and tokens.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "factory_droid"
TITLE = "Factory droid"
ENV_VARS: tuple[str, ...] = ()
EXTRACT = Extract(records="extract/factory_droid__records", blocks="extract/claude_code__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True

#: Folders of a ``~/.factory`` home that hold transcripts, in preference order.
STORE_DIRS = ("sessions", "projects")
SETTINGS = ".settings.json"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``~/.factory`` (droid uses it on Linux and macOS)."""
    return [home / ".factory"]


def resolve_root(path: Path) -> Path:
    """Accept the ``.factory`` folder, its ``sessions/`` (or ``projects/``), one slug folder,
    or a single transcript or settings file."""
    if path.is_file():
        if not (path.name.endswith(".jsonl") or path.name.endswith(SETTINGS)):
            raise RootError(f"{path} is not a droid transcript (.jsonl) or .settings.json")
        return path
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if (path / ".factory").is_dir() and not any((path / d).is_dir() for d in STORE_DIRS):
        path = path / ".factory"
    return path


def discover(root: Path) -> Iterator[SourceFile]:
    """Every transcript and settings file under ``root`` (its ``sessions/`` and ``projects/``
    when it is a ``.factory`` home). Symlinks are not followed."""
    if root.is_file():
        yield _classify(root, root.parent)
        return
    tops = [root / d for d in STORE_DIRS if (root / d).is_dir()] or [root]
    seen: set[str] = set()
    for top in tops:
        found = list(_files(top))
        for path in found:
            if path.name in seen:
                continue  # the same session under sessions/ and projects/: read it once
            yield _classify(path, root)
        seen.update(p.name for p in found)


def _files(top: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        folder = Path(dirpath)
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".jsonl") or name.endswith(SETTINGS):
                yield folder / name


def _classify(path: Path, root: Path) -> SourceFile:
    name = path.name
    if name.endswith(SETTINGS):
        return SourceFile(NAME, path, root, session_hint=name[: -len(SETTINGS)], container="json")
    return SourceFile(NAME, path, root, session_hint=name[: -len(".jsonl")])
