"""Qwen Code: one append-only JSONL transcript per session under ``projects/<cwd-slug>/chats/``.

Evidence: formats.md §7, checked against Qwen Code's own source as stored in the search index
(QwenLM/qwen-code ``packages/core/src/services/chatRecordingService.ts``: the ``ChatRecord``
shape, its ``type``/``subtype``/``provenance`` values and payloads;
``services/sessionService.ts``: records sharing a ``uuid`` are fragments of one message,
merged in file order, and the history is the ``parentUuid`` walk from the last record;
``utils/conversation-chain.ts``: a ``rewind`` record re-roots the chain through its own
``parentUuid``; ``config/storage.ts``: ``projects/`` lives in the runtime base folder, which is
``$QWEN_RUNTIME_DIR``, else ``$QWEN_HOME`` (the ``.qwen`` folder itself), else ``~/.qwen``) and
the samples in shared/peer-fixtures (jazzyalex, portable-resume).

Layout handled:
- ``projects/<slug>/chats/<sessionId>.jsonl``: one session; the file stem is the session id
  (records may carry a foreign ``sessionId``, so the field is not a key).
- Skipped: ``chats/archive/`` (archived sessions, moved there by the CLI; reading both folders
  would count a session twice when it moves) and every file that is not ``.jsonl`` (runtime
  sidecars). A folder of transcripts given directly as ``--root`` is read too.

Records, one row per physical line (parsing is ``sql/extract/qwen_code__*.sql``):
- ``uuid``/``parentUuid`` are kept as ``message_id``/``parent_id``. Several lines with the same
  uuid are fragments of one message (e.g. a thought, then the answer and its function calls);
  each stays a row of its own, with the kind of what it carries, as Claude Code's per-block
  lines do. A ``system``/``rewind`` record's ``parentUuid`` is the message the conversation
  goes on from, so abandoned branches are simply other children in the tree.
- ``tool_result`` records are role 'user', kind 'tool_result'; calls and results are linked by
  ``functionCall.id`` = ``functionResponse.id`` (= ``toolCallResult.callId``).
- Harness input is tagged in ``harness_kind``: ``notification``/``cron``/
  ``background_task_completed`` user records, non-human ``provenance``, slash commands
  (``system``/``slash_command``: 'slash_command' for the invocation, 'command_output' for the
  result) and a part made only of the ``<qwen:user-prompt-submit-context>`` hook text. For user
  records ``text`` is ``systemPayload.displayText`` (what the person typed) when present.
- ``system`` records: ``chat_compression`` is a compact boundary (role 'system'); a record
  without subtype but with a message is role 'system'; every other subtype is bookkeeping
  (role null) with ``kind`` = its subtype, or 'metadata' for ``custom_title``,
  ``session_model``, ``parent_session`` and other session-level settings. A
  ``parent_session`` record fills ``parent_session_id``.
- Tokens from ``usageMetadata``: ``input_tokens`` = promptTokenCount (includes the cached
  part), ``cache_read_tokens`` = cachedContentTokenCount, ``output_tokens`` =
  candidatesTokenCount.
- Two objects glued on one line (a torn write) are quarantined as one bad line, bytes kept.

Not covered: a runtime folder set only in settings (not by environment) is not found by
default (pass it as ``--root``); subagent records are read where Qwen Code writes them into
the session file (``isSidechain``/``agentId``); separate subagent transcript files, if a
version writes them outside ``chats/``, are not looked for (no source or sample shows one).
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "qwen_code"
TITLE = "Qwen Code"
ENV_VARS = ("QWEN_RUNTIME_DIR", "QWEN_HOME")
EXTRACT = Extract(records="extract/qwen_code__records", blocks="extract/qwen_code__blocks")


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """Where Qwen Code writes ``projects/``: ``$QWEN_RUNTIME_DIR``, ``$QWEN_HOME`` (the
    ``.qwen`` folder itself, not a home), then ``~/.qwen``."""
    roots: list[Path] = []
    for var in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
        if env.get(var):
            roots.append(Path(env[var]).expanduser())
    roots.append(home / ".qwen")
    return roots


def resolve_root(path: Path) -> Path:
    """Accept the ``.qwen`` (or runtime) folder holding ``projects/``, ``projects/`` itself,
    one project folder, a ``chats/`` folder, or a single transcript file."""
    if path.is_file():
        if path.suffix != ".jsonl":
            raise RootError(f"{path} is not a .jsonl transcript")
        return path
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if (path / "projects").is_dir():
        return path / "projects"
    return path


def discover(root: Path) -> Iterator[SourceFile]:
    """Every transcript directly inside a ``chats/`` folder under ``root`` (or directly inside
    ``root``); ``chats/archive/`` is left out. Symlinks are not followed."""
    if root.is_file():
        yield SourceFile(NAME, root, root.parent, session_hint=root.stem)
        return
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        if here.name == "chats":
            dirnames[:] = [d for d in dirnames if d != "archive"]
        dirnames.sort()
        if here.name != "chats" and here != root:
            continue
        for name in sorted(filenames):
            if name.endswith(".jsonl"):
                path = here / name
                yield SourceFile(NAME, path, root, session_hint=path.stem)
