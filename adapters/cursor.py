"""Cursor: the desktop IDE's SQLite key-value stores, the ``cursor-agent`` CLI's per-chat
SQLite stores, and the agent transcripts (JSONL) both of them write.

Evidence followed (formats.md §4, confidence R F: Cursor is closed source, so every shape
below comes from third-party readers and sample stores, never from Cursor's own code):

- Desktop, ``<user data>/User/globalStorage/state.vscdb`` (``~/.config/Cursor/User`` on Linux,
  ``$XDG_CONFIG_HOME/Cursor/User`` when set, ``~/Library/Application Support/Cursor/User`` on
  macOS). Table ``cursorDiskKV(key, value)``: ``composerData:<composerId>`` is one
  conversation (``name``, ``createdAt``/``lastUpdatedAt`` in Unix ms, ``modelConfig.modelName``,
  ``unifiedMode``, ``fullConversationHeadersOnly`` = the bubbles in turn order; older ``_v``
  keep the bubbles inline in ``conversation[]``), ``bubbleId:<composerId>:<bubbleId>`` is one
  message (``type`` 1 = user, 2 = assistant; ``text``; ``thinking.text``; ``toolFormerData``
  with the tool ``name``, ``params``/``rawArgs`` (JSON text), ``result`` (JSON text),
  ``status``, ``toolCallId``; ``tokenCount.inputTokens/outputTokens``; ``modelInfo.modelName``;
  ``createdAt`` ISO text, or ``timingInfo.clientStartTime`` in ms). Readers followed:
  Dicklesworthstone/franken_agent_detection ``src/connectors/cursor.rs`` and the gnomon sample
  DB. Subagent composers carry ``subagentInfo.parentComposerId`` and the workspace folder is
  ``workspaceIdentifier.uri.fsPath`` (seen in several third-party readers and decompilation
  notes; H). Other key prefixes (checkpoints, diffs, request contexts) are side data and are
  not read.
- Desktop, ``workspaceStorage/<hash>/state.vscdb``: only ``ItemTable`` rows matter. The
  legacy chat (Cursor ≤ 0.3x) ``workbench.panel.aichat.view.aichat.chatdata`` =
  ``{"tabs": [{"tabId", "chatTitle", "bubbles": [{"type": "user"|"ai", "text"}]}]}``; prompt
  and generation history ``aiService.prompts`` / ``aiService.generations`` (an index of what
  was typed, kept as bookkeeping records, never as messages: formats.md §0 rule 2); and
  ``composer.composerData.allComposers`` (which composers belong to the workspace, with
  their names), read as metadata records of those composers. No sample of the legacy keys
  exists (formats.md §24); their shapes follow franken_agent_detection and formats.md.
- ``cursor-agent`` CLI, ``~/.cursor/chats/<md5(cwd)>/<chatId>/store.db`` (and
  ``~/.cursor/acp-sessions/<chatId>/store.db``): ``meta(key, value)`` whose key ``"0"`` holds
  hex-encoded JSON ``{agentId, name, mode, createdAt (ms), lastUsedModel, latestRootBlobId,
  subagentInfo?}`` (jazzyalex/agent-sessions ``CursorChatMetaReader.swift`` and the
  ``test-store.db`` sample), and ``blobs(id, data)``, a content-addressed tree: JSON message
  blobs ``{role: user|assistant|tool|system, content: text or [text | reasoning | tool-call |
  tool-result]}`` reached from ``latestRootBlobId`` through binary (protobuf-framed) nodes
  whose 32-byte fields name child blobs (a third-party "Cursor Agent Database Format"
  reference found in the search index, R H; the ACP reader in agent-sessions walks the same
  framing). The tree is walked from the root blob by blob, each one fetched by id, so a large
  table is never loaded whole; JSON message blobs the walk does not reach are still archived
  (kind ``unreachable_message``, no role) and a node naming a blob that is absent becomes a
  ``missing_blob`` record. Protobuf-only message blobs (ACP stores) are not decoded. A
  ``meta.json`` beside a ``store.db`` is read as one metadata record (its ``cwd``).
- Agent transcripts, ``~/.cursor/projects/<slug>/agent-transcripts/<id>.jsonl``,
  ``…/<id>/<id>.jsonl`` and ``…/<id>/subagents/<sub>.jsonl``: one ``{"role", "message":
  {"content": [...]}}`` per line plus ``{"type": "turn_ended"}``; no timestamps, no tool ids,
  no tool results (agent-sessions ``CursorSessionParser.swift``, franken_agent_detection, the
  gnomon and agent-sessions samples).

Locations: no documented override moves ``~/.cursor``; the CLI documents
``CURSOR_CONFIG_DIR`` as its config folder (a third-party copy of the CLI docs, H), so that
folder is probed first, beside ``~/.cursor``, not instead of it. A ``.db``/``.vscdb`` under
another name is read only where the user points at a folder that is not a Cursor layout (the
agent-sessions sample is ``test-store.db``); which kind of store it is comes from its tables.

Decisions where the evidence is thin: a bubble's time is its own ``createdAt`` (ISO or ms) or
``timingInfo`` (ms); one with neither keeps a null timestamp rather than borrowing the
composer's (its month does). A tool call and its result share one bubble, so they become a
tool_use and a tool_result block with one call id (``toolCallId``, else the bubble id); the
result block exists once there is a ``result`` or a ``status``, and a status of error,
failed, cancelled, rejected or aborted marks it an error. Transcript tool calls carry no id:
each gets ``line<N>.<i>`` (line and block number) so it still lists as a call, without result.

Sessions: a composer is session ``<composerId>``, a CLI chat ``<chatId>``; the same
conversation is often also written as a transcript under the same id, so transcript
sessions are ``transcript:<id>`` (subagents ``transcript:<sub>`` with parent
``transcript:<id>``) rather than merged into the store's session, which would count every
message twice.

Each SQLite copy becomes one JSON line per composer, bubble, ItemTable entry, meta row and
message blob: ``{"_src", "_table", "_key", "_type", <key parts>, "value": <the row's JSON>}``.
A row whose JSON does not parse becomes one line that is not JSON (quarantined with the key
and raw text) while the other rows load; a database without the expected tables raises, and
etl quarantines it once as unreadable. Parsing is the SQL in ``sql/extract/cursor__*.sql``.
This module finds the stores and picks a reader; the readers of the two SQLite kinds are
adapters/_cursor_vscdb.py and adapters/_cursor_agent_db.py, their shared row-to-line helpers
adapters/_cursor_rows.py.
"""
from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters._cursor_agent_db import STORE_DB, _store_db_lines
from convarch.adapters._cursor_rows import _line, _malformed, _parse, _s
from convarch.adapters._cursor_vscdb import _vscdb_lines
from convarch.adapters.base import Extract, RootError, SourceFile, Unchecked

NAME = "cursor"
TITLE = "Cursor"
ENV_VARS = ("CURSOR_CONFIG_DIR",)
EXTRACT = Extract(records="extract/cursor__records", blocks="extract/cursor__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True

VSCDB = "state.vscdb"
TRANSCRIPTS = "agent-transcripts"
#: Folders of a Cursor home (``~/.cursor``) that hold conversations; the rest (extensions,
#: skills, rules…) is never walked.
HOME_DIRS = ("chats", "acp-sessions", "projects")
DESKTOP_DIRS = ("globalStorage", "workspaceStorage")


# --------------------------------------------------------------------------- locations


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """The CLI home (``$CURSOR_CONFIG_DIR`` when set, then ``~/.cursor``) and the desktop
    user-data folder on Linux (``$XDG_CONFIG_HOME`` aware, as Electron is) and macOS."""
    roots: list[Path] = []
    if env.get("CURSOR_CONFIG_DIR"):
        roots.append(Path(env["CURSOR_CONFIG_DIR"]).expanduser())
    roots.append(home / ".cursor")
    xdg = env.get("XDG_CONFIG_HOME")
    roots.append((Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config") / "Cursor" / "User")
    roots.append(home / "Library" / "Application Support" / "Cursor" / "User")
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept a home folder (holding ``.cursor`` or the desktop user data), a Cursor home
    (``~/.cursor``), a desktop ``User`` folder or its parent, any folder inside them
    (``projects``, ``chats``, ``workspaceStorage``…), or one ``state.vscdb``, ``store.db`` or
    transcript ``.jsonl``."""
    if path.is_file():
        if path.suffix in (".vscdb", ".db", ".jsonl"):
            return path
        raise RootError(f"{path} is not a Cursor state.vscdb, store.db or .jsonl transcript")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if not _is_desktop(path) and _is_desktop(path / "User"):
        return path / "User"
    return path


def _is_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _is_desktop(path: Path) -> bool:
    return any(_is_dir(path / d) for d in DESKTOP_DIRS)


def _is_home(path: Path) -> bool:
    return any(_is_dir(path / d) for d in HOME_DIRS)


def discover(root: Path) -> Iterator[SourceFile]:
    """Every Cursor store file under ``root``, classified by its place in the tree.

    In a home folder, a Cursor home or a desktop user-data folder only the places that hold
    conversations are read (``globalStorage/state.vscdb``, ``workspaceStorage/*/state.vscdb``,
    ``chats``, ``acp-sessions``, ``projects/*/agent-transcripts``), never extensions, caches
    or settings; any other folder is walked whole. Symlinks are not followed.
    """
    if root.is_file():
        sf = _classify(root, root.parent, generic=True)
        if sf is not None:
            yield sf
        return
    yield from _discover_dir(root, root)


def _discover_dir(folder: Path, root: Path) -> Iterator[SourceFile]:
    homes = [h for h in (folder / ".cursor", folder / ".config" / "Cursor" / "User",
                         folder / "Library" / "Application Support" / "Cursor" / "User") if _is_dir(h)]
    if homes:                                   # a user's home folder
        for h in homes:
            yield from _discover_dir(h, root)
        return
    if not _is_desktop(folder) and _is_desktop(folder / "User"):
        yield from _discover_dir(folder / "User", root)
        return
    if not (_is_desktop(folder) or _is_home(folder)):
        # a folder of (or holding) agent transcripts takes only transcripts; any other
        # unknown folder (a sample, a backup) takes every store-looking file
        generic = folder.name not in DESKTOP_DIRS + HOME_DIRS and not (
            TRANSCRIPTS in folder.parts or _is_dir(folder / TRANSCRIPTS))
        if folder.name == "globalStorage":
            yield from _files(folder, root, (VSCDB,))
        elif folder.name == "workspaceStorage":
            yield from _workspaces(folder, root)
        else:
            yield from _walk_files(folder, root, generic)
        return
    # a store file kept right in the folder (a copied state.vscdb beside projects/)
    yield from _files(folder, root, (VSCDB, STORE_DB))
    if _is_dir(folder / "globalStorage"):
        yield from _files(folder / "globalStorage", root, (VSCDB,))
    if _is_dir(folder / "workspaceStorage"):
        yield from _workspaces(folder / "workspaceStorage", root)
    for d in HOME_DIRS:
        if _is_dir(folder / d):
            yield from _walk_files(folder / d, root, False)


def _files(folder: Path, root: Path, names: tuple[str, ...]) -> Iterator[SourceFile]:
    for name in names:
        p = folder / name
        if p.is_file() or p.is_symlink():       # etl skips a symlink with a reason
            sf = _classify(p, root, generic=False)
            if sf is not None:
                yield sf


def _workspaces(folder: Path, root: Path) -> Iterator[SourceFile]:
    try:
        subs = sorted(e.name for e in os.scandir(folder) if e.is_dir(follow_symlinks=False))
    except OSError:
        return
    for sub in subs:
        yield from _files(folder / sub, root, (VSCDB,))


def _walk_files(top: Path, root: Path, generic: bool) -> Iterator[SourceFile]:
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        folder = Path(dirpath)
        dirnames.sort()
        for name in sorted(filenames):
            sf = _classify(folder / name, root, generic)
            if sf is not None:
                yield sf


def _classify(path: Path, root: Path, generic: bool) -> SourceFile | None:
    name = path.name
    if name == VSCDB or (generic and name.endswith(".vscdb")):
        return SourceFile(NAME, path, root, container="sqlite")
    if name == STORE_DB:
        return SourceFile(NAME, path, root, session_hint=path.parent.name, container="sqlite")
    if generic and name.endswith(".db"):
        # a store.db kept under another name (a sample, a backup): its meta row names the chat
        return SourceFile(NAME, path, root, container="sqlite")
    if name == "meta.json" and (path.parent / STORE_DB).is_file():
        return SourceFile(NAME, path, root, session_hint=path.parent.name, container="json")
    if path.suffix != ".jsonl":
        return None
    parts = path.parts
    if TRANSCRIPTS in parts:
        after = parts[len(parts) - parts[::-1].index(TRANSCRIPTS):]
        if len(after) == 3 and after[1] == "subagents":
            return _transcript(path, root, path.stem, after[0])
    elif not generic:
        return None          # a .jsonl in a Cursor store folder that is not a transcript
    if path.parent.name == "subagents":
        return _transcript(path, root, path.stem, path.parent.parent.name)
    return _transcript(path, root, path.stem, None)


def _transcript(path: Path, root: Path, sid: str, parent: str | None) -> SourceFile:
    return SourceFile(NAME, path, root, session_hint=f"transcript:{sid}",
                      parent_session_hint=f"transcript:{parent}" if parent else None)


# --------------------------------------------------------------------------- lines


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """The JSON lines of the private copy of one SQLite store (or ``meta.json``)."""
    return _lines(copy, file, unchecked=False)


def to_lines_unchecked(copy: Path, file: SourceFile) -> Iterator[bytes | Unchecked]:
    """to_lines, with each bubble's line not yet checked (adapters/base.py, Unchecked)."""
    return _lines(copy, file, unchecked=True)


def _lines(copy: Path, file: SourceFile, unchecked: bool) -> Iterator[bytes | Unchecked]:
    if file.container == "json":
        yield from _meta_json_lines(copy, file)
        return
    if file.container != "sqlite":
        raise ValueError(f"cursor has no reader for a {file.container!r} container")
    # The copy is private to this run: opening it read-write lets SQLite roll back a copied
    # hot journal or replay a -wal; query_only keeps the reader from changing anything else.
    con = sqlite3.connect(Path(copy).absolute().as_uri() + "?mode=rw", uri=True)
    try:
        con.execute("pragma query_only = 1")
        # every TEXT value comes back as bytes: one row that is not UTF-8 must not stop the rest
        con.text_factory = bytes
        tables = {_s(r[0]) for r in con.execute("select name from sqlite_master where type = 'table'")}
        # told apart by their tables, so a store kept under another name still reads
        if tables & {"cursorDiskKV", "ItemTable"}:
            yield from _vscdb_lines(con, tables, file, unchecked)
        elif tables & {"meta", "blobs"}:
            yield from _store_db_lines(con, tables, file)
        else:
            raise ValueError("not a Cursor store: no cursorDiskKV or ItemTable table (state.vscdb) "
                             "and no meta or blobs table (cursor-agent store.db)")
    finally:
        con.close()




# ---- meta.json beside a store.db


def _meta_json_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    raw = Path(copy).read_bytes()
    try:
        _parse(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        yield _malformed(f"meta.json of {file.session_hint}", raw.replace(b"\r", b" ").replace(b"\n", b" "), str(exc))
        return
    yield _line({"_src": "chat_meta_json", "_table": None, "_key": "meta.json", "_type": "chat_meta_json",
                 "agentId": file.session_hint}, raw.replace(b"\r", b" ").replace(b"\n", b" "))
