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
"""
from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile, malformed_row

NAME = "cursor"
TITLE = "Cursor"
ENV_VARS = ("CURSOR_CONFIG_DIR",)
EXTRACT = Extract(records="extract/cursor__records", blocks="extract/cursor__blocks")

VSCDB = "state.vscdb"
STORE_DB = "store.db"
TRANSCRIPTS = "agent-transcripts"
#: Folders of a Cursor home (``~/.cursor``) that hold conversations; the rest (extensions,
#: skills, rules…) is never walked.
HOME_DIRS = ("chats", "acp-sessions", "projects")
DESKTOP_DIRS = ("globalStorage", "workspaceStorage")
ITEM_KEYS = (
    "workbench.panel.aichat.view.aichat.chatdata",
    "aiService.prompts",
    "aiService.generations",
    "composer.composerData",
)
MAX_TREE_DEPTH = 64
MAX_TREE_VISITS = 2_000_000


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
        dirnames.sort()
        for name in sorted(filenames):
            sf = _classify(Path(dirpath) / name, root, generic)
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
            yield from _vscdb_lines(con, tables, file)
        elif tables & {"meta", "blobs"}:
            yield from _store_db_lines(con, tables, file)
        else:
            raise ValueError("not a Cursor store: no cursorDiskKV or ItemTable table (state.vscdb) "
                             "and no meta or blobs table (cursor-agent store.db)")
    finally:
        con.close()


def _line(envelope: dict, value: bytes | str | None) -> bytes:
    """The envelope as JSON with the row's JSON text spliced in verbatim as ``value``.

    Only called with text that parsed, so the result is one valid JSON object."""
    head = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))[:-1]
    if value is None:
        return (head + ',"value":null}').encode("utf-8")
    if isinstance(value, str):
        value = value.encode("utf-8")
    return head.encode("utf-8") + b',"value":' + value.strip() + b"}"


def _malformed(where: str, raw: bytes | str | None, error: str) -> bytes:
    """A line that is deliberately not JSON, so the row is quarantined with its key, the
    parse error and its raw text."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    return malformed_row(f"cursor {where}", f"malformed JSON ({error})", raw)


def _no_constants(name: str):
    raise ValueError(f"{name} is not JSON")


def _parse(raw: bytes | str) -> object:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8")
    return json.loads(raw, parse_constant=_no_constants)


def _s(value) -> str:
    """A key or name as text (TEXT columns are read as bytes)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _as_text(raw) -> bytes | str | None:
    if isinstance(raw, (int, float)):
        return str(raw)
    return raw


# ---- desktop state.vscdb


def _vscdb_lines(con: sqlite3.Connection, tables: set[str], file: SourceFile) -> Iterator[bytes]:
    scope = file.path.parent.name
    if "cursorDiskKV" in tables:
        yield from _composer_lines(con)
    if "ItemTable" in tables:
        yield from _item_lines(con, scope)


def _kv(con: sqlite3.Connection, key: str):
    row = con.execute("select value from cursorDiskKV where key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def _key_range(prefix: str) -> tuple[str, str]:
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _composer_lines(con: sqlite3.Connection) -> Iterator[bytes]:
    """Each composer, then its bubbles in turn order, then its bubbles no header names; last,
    bubbles whose composer row is gone. Rows are read one at a time."""
    seen: set[str] = set()
    lo, hi = _key_range("composerData:")
    rows = con.execute(
        "select key, value from cursorDiskKV where key >= ? and key < ? and value is not null order by key",
        (lo, hi),
    )
    for key, raw in rows:
        key = _s(key)
        cid = key[len("composerData:"):]
        seen.add(cid)
        raw = _as_text(raw)
        try:
            value = _parse(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            yield _malformed(f"cursorDiskKV[{key}]", raw, str(exc))
            yield from _bubble_lines(con, cid, [], {})
            continue
        composer = value if isinstance(value, dict) else {}
        inline = composer.get("conversation")
        inline = inline if isinstance(inline, list) else []
        info = composer.get("subagentInfo")
        parent = info.get("parentComposerId") if isinstance(info, dict) else None
        ctx = {"composerCreatedAt": composer.get("createdAt"),
               "parentComposerId": parent if isinstance(parent, str) else None}
        env = {"_src": "vscdb", "_table": "cursorDiskKV", "_key": key, "_type": "composer",
               "composerId": cid, "inlineBubbles": len(inline)}
        if inline:
            # the inline bubbles become lines of their own; the composer line keeps the rest
            rest = {k: v for k, v in composer.items() if k != "conversation"}
            yield _line(env, json.dumps(rest, ensure_ascii=False, separators=(",", ":")))
            for i, bubble in enumerate(inline):
                bid = bubble.get("bubbleId") if isinstance(bubble, dict) else None
                yield _line({"_src": "vscdb", "_table": "cursorDiskKV", "_key": key, "_type": "bubble",
                             "composerId": cid, "bubbleId": bid, "seq": i, "inline": True, **ctx},
                            json.dumps(bubble, ensure_ascii=False, separators=(",", ":")))
        else:
            yield _line(env, raw)
        headers = composer.get("fullConversationHeadersOnly")
        order = [h.get("bubbleId") for h in headers if isinstance(h, dict) and isinstance(h.get("bubbleId"), str)] \
            if isinstance(headers, list) else []
        yield from _bubble_lines(con, cid, order, ctx)
    # bubbles of composers that have no composerData row (deleted or never written)
    lo, hi = _key_range("bubbleId:")
    current = None
    for (key,) in con.execute("select key from cursorDiskKV where key >= ? and key < ? order by key", (lo, hi)):
        parts = _s(key).split(":", 2)
        cid = parts[1] if len(parts) == 3 else ""
        if cid in seen or cid == current:
            continue
        current = cid
        yield from _bubble_lines(con, cid, [], {})


def _bubble_lines(con: sqlite3.Connection, cid: str, order: list[str], ctx: dict) -> Iterator[bytes]:
    done: set[str] = set()
    for i, bid in enumerate(order):
        if bid in done:
            continue
        key = f"bubbleId:{cid}:{bid}"
        raw = _kv(con, key)
        if raw is None:
            continue
        done.add(bid)
        yield _bubble_line(key, cid, bid, i, raw, ctx)
    lo, hi = _key_range(f"bubbleId:{cid}:")
    keys = [_s(k) for (k,) in con.execute(
        "select key from cursorDiskKV where key >= ? and key < ? order by key", (lo, hi))]
    for key in keys:
        bid = key[len(lo):]
        if bid in done:
            continue
        raw = _kv(con, key)
        if raw is None:
            continue
        yield _bubble_line(key, cid, bid, None, raw, ctx)


def _bubble_line(key: str, cid: str, bid: str, seq: int | None, raw, ctx: dict) -> bytes:
    raw = _as_text(raw)
    try:
        _parse(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return _malformed(f"cursorDiskKV[{key}]", raw, str(exc))
    env = {"_src": "vscdb", "_table": "cursorDiskKV", "_key": key, "_type": "bubble",
           "composerId": cid, "bubbleId": bid, "seq": seq, "inline": False, **ctx}
    return _line(env, raw)


def _item_lines(con: sqlite3.Connection, scope: str) -> Iterator[bytes]:
    marks = ", ".join("?" for _ in ITEM_KEYS)
    rows = con.execute(
        f"select key, value from ItemTable where key in ({marks}) and value is not null order by key", ITEM_KEYS)
    for key, raw in rows:
        key = _s(key)
        raw = _as_text(raw)
        try:
            value = _parse(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            yield _malformed(f"ItemTable[{key}]", raw, str(exc))
            continue
        base = {"_src": "vscdb", "_table": "ItemTable", "_key": key, "scope": scope}
        if key == "workbench.panel.aichat.view.aichat.chatdata":
            tabs = value.get("tabs") if isinstance(value, dict) else None
            for t, tab in enumerate(tabs if isinstance(tabs, list) else []):
                if not isinstance(tab, dict):
                    continue
                tab_id = tab.get("tabId") or f"aichat:{scope}:{t}"
                bubbles = tab.get("bubbles")
                bubbles = bubbles if isinstance(bubbles, list) else []
                rest = {k: v for k, v in tab.items() if k != "bubbles"}
                yield _line({**base, "_type": "aichat_tab", "tabId": tab_id, "seq": t,
                             "bubbleCount": len(bubbles)}, _dump(rest))
                for i, bubble in enumerate(bubbles):
                    yield _line({**base, "_type": "aichat_bubble", "tabId": tab_id, "seq": i,
                                 "tabLastSendTime": tab.get("lastSendTime")}, _dump(bubble))
        elif key in ("aiService.prompts", "aiService.generations"):
            kind = "prompt_history" if key == "aiService.prompts" else "generation_history"
            for i, entry in enumerate(value if isinstance(value, list) else [value]):
                yield _line({**base, "_type": kind, "seq": i}, _dump(entry))
        else:  # composer.composerData: the composers this workspace lists
            listed = value.get("allComposers") if isinstance(value, dict) else None
            for i, entry in enumerate(listed if isinstance(listed, list) else []):
                cid = entry.get("composerId") if isinstance(entry, dict) else None
                if isinstance(cid, str):
                    yield _line({**base, "_type": "composer_index", "composerId": cid, "seq": i}, _dump(entry))


def _dump(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ---- cursor-agent store.db


def _store_db_lines(con: sqlite3.Connection, tables: set[str], file: SourceFile) -> Iterator[bytes]:
    metas: list[tuple[str, object, str | None]] = []
    if "meta" in tables:
        for key, raw in con.execute("select key, value from meta order by key"):
            try:
                metas.append((_s(key), _parse(_unhex(raw)), None))
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                metas.append((_s(key), raw, str(exc)))
    head = next((v for k, v, err in metas if k == "0" and err is None and isinstance(v, dict)), {})
    # the chat folder names the chat (Cursor resumes by it); a store found under another
    # name falls back to the agentId its meta row records
    chat_id = file.session_hint if file.path.name == STORE_DB else None
    if chat_id is None and isinstance(head.get("agentId"), str):
        chat_id = head["agentId"]
    root_id = head.get("latestRootBlobId")
    info = head.get("subagentInfo")
    parent = info.get("parentAgentId") if isinstance(info, dict) else None
    base = {"_src": "store_db", "_table": "blobs", "agentId": chat_id,
            "parentAgentId": parent if isinstance(parent, str) else None}
    for key, value, err in metas:
        if err is not None:
            yield _malformed(f"meta[{key}]", value if isinstance(value, (bytes, str)) else str(value), err)
        else:
            yield _dump({**base, "_table": "meta", "_key": key, "_type": "chat_meta", "value": value}).encode("utf-8")
    if "blobs" not in tables:
        return
    walked: set[str] = set()
    if isinstance(root_id, str) and root_id:
        yield from _walk(con, root_id, base, walked)
    # JSON message blobs the walk did not reach (every blob when there is no root), in
    # table order, one row at a time
    try:
        cur = con.execute("select id, data from blobs order by rowid")
    except sqlite3.OperationalError:
        cur = con.execute("select id, data from blobs order by id")
    reachable = None if not walked else False
    for blob_id, data in cur:
        blob_id = _s(blob_id)
        if blob_id in walked or not _looks_json(data):
            continue
        yield _message_line(base, blob_id, data, None, reachable)


def _unhex(raw) -> bytes | str:
    """meta values are hex-encoded JSON; plain JSON text is accepted too."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("ascii")
        except UnicodeDecodeError:
            return raw
    if not isinstance(raw, str):
        raise ValueError(f"a {type(raw).__name__} value, not JSON text")
    text = raw.strip()
    if text and len(text) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in text):
        return bytes.fromhex(text)
    return text


def _looks_json(data) -> bool:
    if isinstance(data, str):
        return data.lstrip()[:1] == "{"
    return isinstance(data, bytes) and data.lstrip()[:1] == b"{"


def _message_line(base: dict, key: str, data, seq: int | None, reachable: bool | None) -> bytes:
    raw = _as_text(data)
    try:
        _parse(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return _malformed(f"blobs[{key}]", raw, str(exc))
    return _line({**base, "_key": key, "_type": "blob_message", "seq": seq, "reachable": reachable}, raw)


def _walk(con: sqlite3.Connection, root_id: str, base: dict, walked: set[str]) -> Iterator[bytes]:
    """Depth-first, in field order, from the root blob: JSON blobs are messages, binary blobs
    are nodes whose 32-byte fields name children. A blob on the current path is not entered
    again (no cycles), and the walk is bounded."""
    seq = 0
    visits = 0
    path: list[str] = []

    def fetch(blob_id: str):
        row = con.execute("select data from blobs where id = ?", (blob_id,)).fetchone()
        return None if row is None else row[0]

    def visit(blob_id: str, data, depth: int):
        nonlocal seq, visits
        visits += 1
        walked.add(blob_id)
        if _looks_json(data):
            seq += 1
            yield _message_line(base, blob_id, data, seq, True)
            return
        if depth >= MAX_TREE_DEPTH or visits > MAX_TREE_VISITS or not isinstance(data, bytes):
            return
        path.append(blob_id)
        for number, value in _fields(data):
            if len(value) == 32:
                child = value.hex()
                if child in path:
                    continue
                child_data = fetch(child)
                if child_data is None:
                    if number == 1:   # the reference field: the blob it names is gone
                        yield _dump({**base, "_key": child, "_type": "missing_blob", "seq": None,
                                     "referencedBy": blob_id, "value": None}).encode("utf-8")
                    continue
                yield from visit(child, child_data, depth + 1)
            elif value[:1] == b"{":
                try:
                    obj = _parse(value)
                except (ValueError, UnicodeDecodeError, RecursionError):
                    continue
                if isinstance(obj, dict) and "role" in obj:
                    seq += 1
                    yield _line({**base, "_key": f"{blob_id}#{number}", "_type": "blob_message", "seq": seq,
                                 "reachable": True, "embedded": True}, value)
        path.pop()

    data = fetch(root_id)
    if data is None:
        yield _dump({**base, "_key": root_id, "_type": "missing_blob", "seq": None,
                     "referencedBy": "meta.latestRootBlobId", "value": None}).encode("utf-8")
        return
    yield from visit(root_id, data, 0)


def _fields(data: bytes) -> list[tuple[int, bytes]]:
    """The length-delimited fields of a protobuf-framed node, in order; [] if it is not one."""
    out: list[tuple[int, bytes]] = []
    i, n = 0, len(data)
    while i < n:
        key, i = _varint(data, i)
        if key is None:
            return out
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, i = _varint(data, i)
            if i is None:
                return out
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            length, i = _varint(data, i)
            if length is None or i + length > n:
                return out
            out.append((number, data[i:i + length]))
            i += length
        else:
            return out
    return out


def _varint(data: bytes, i: int) -> tuple[int | None, int | None]:
    value = shift = 0
    while i < len(data) and shift < 64:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
    return None, None


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
