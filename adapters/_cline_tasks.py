"""Shared reading of the Cline family's stores: Cline, Roo Code and Kilo Code.

Roo Code forked Cline, and Kilo Code forked Roo Code, so their VS Code extensions keep one
folder per task under the extension's ``globalStorage`` with the same file names; the Cline
SDK/CLI added a per-session store of its own. This module holds what the three adapters
share: where VS Code keeps an extension's storage, how a root given by the user becomes a
store, how files are classified by path (never parsed while listing), and how a private copy
of one JSON file becomes JSON lines for ``sql/extract/cline_family__*.sql``.

Files and what each becomes (one line per record, in file order):

- ``tasks/<taskId>/api_conversation_history.json``: the model context, an array of Anthropic
  ``MessageParam`` (Cline adds ``id``/``ts``/``modelInfo``/``metrics`` in newer builds, Roo adds
  ``ts``/``isSummary``/``condenseId``/``condenseParent``… and standalone ``{"type":
  "reasoning"}`` items) or, since Roo's "RooMessage" storage, ``{"version": 2, "messages":
  [...]}`` with AI SDK parts (``tool-call``/``tool-result``/``reasoning`` and ``role: "tool"``
  messages). One ``api_message`` line per message.
- ``tasks/<taskId>/ui_messages.json`` (``claude_messages.json`` in the first builds): what the
  webview shows, ``ClineMessage[]`` with ``ts``, ``type`` say/ask and ``text``. One
  ``ui_message`` line per entry; the SQL keeps them as bookkeeping rows (never messages): the
  ``say: "task"`` entry carries the task as typed (the session's title) and the
  ``api_req_started`` entries carry the token counts of each API request.
- ``tasks/<taskId>/task_metadata.json``: ``{files_in_context, model_usage,
  environment_history}``, one ``task_metadata`` line per list entry.
- ``tasks/<taskId>/history_item.json`` (Roo, 2026) and ``state/taskHistory.json`` (Cline, an
  array for every task): HistoryItem, one ``history_item`` line each (title, workspace, parent
  task). Roo's ``tasks/_index.json`` is a cache rebuilt from the ``history_item.json`` files
  and is not read.
- Cline SDK/CLI ``sessions/<id>/<id>.json`` (the session manifest) and
  ``sessions/<id>/<id>.messages.json`` (``{version, sessionId, agent, updated_at,
  system_prompt, messages[]}``): one ``manifest`` line, one ``transcript`` line (the document
  without its messages) and one ``sdk_message`` line per message. ``db/sessions.db`` is an
  index of the manifests and is not read.

A file that is not JSON is quarantined whole, except a top-level array cut short (the
extensions rewrite these files in place, so a crash can leave one torn): its complete elements
load and the torn tail is quarantined as a malformed row.

A long task's API history grows to hundreds of megabytes, and parsing it as one document took
three to four times its size in memory (a 434 MB history: 1.5 GB). A document of STREAM_BYTES
or more is therefore read an element at a time (adapters/_json_stream.py): an array's
elements, or the `messages` of an object (Roo's RooMessage history, the SDK's messages file),
whose other members are read in a first pass that passes over the messages unbuilt. Both ways
give the same lines.

Old (XML) tool calls: until native tool calling, Cline and Roo wrote a tool call as XML in the
assistant's text (``<read_file>\\n<path>a.ts</path>\\n</read_file>``) and answered it in the
next user message with text blocks headed ``[read_file for 'a.ts'] Result:``. Such calls have
no ids; ``to_lines`` recognises the tools both agents define, adds to the assistant line an
``xml_blocks`` list of ``tool_use`` blocks with ids ``xml:<message index>:<n>``, and to the
user line ``tool_result`` markers naming the content blocks that hold each result (``from`` /
``to``), so the SQL emits linked tool_use/tool_result blocks without copying the result text.
"""
from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from convarch.adapters import _json_stream as json_stream
from convarch.adapters.base import RootError, SourceFile, malformed_row

#: File names of a task folder and what they hold.
TASK_FILES = {
    "api_conversation_history.json": "api",
    "ui_messages.json": "ui",
    "claude_messages.json": "ui",
    "task_metadata.json": "meta",
    "history_item.json": "history",
}
#: VS Code builds whose user-data folder has the same layout (formats.md §9).
VSCODE_VARIANTS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
#: Folders never walked: shadow git repositories of checkpoints and other bulk.
PRUNE = {"checkpoints", ".git", "node_modules", "cache", "puppeteer", "shadow-git"}
MESSAGES_SUFFIX = ".messages.json"
#: A top-level array at least this big is parsed an element at a time (see the module's doc).
STREAM_BYTES = json_stream.STREAM_BYTES


# --- where the stores live -------------------------------------------------------------------

def vscode_storage_dirs(env: Mapping[str, str], home: Path, extension_id: str) -> list[Path]:
    """``<user data>/User/globalStorage/<extension>`` for every VS Code build, on Linux
    (``$XDG_CONFIG_HOME`` aware, as Electron is) and macOS, plus the VS Code server folder a
    remote (SSH, WSL, container) window uses."""
    xdg = env.get("XDG_CONFIG_HOME")
    bases = [Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config", home / ".config",
             home / "Library" / "Application Support"]
    roots = [base / variant / "User" / "globalStorage" / extension_id
             for base in bases for variant in VSCODE_VARIANTS]
    roots.append(home / ".vscode-server" / "data" / "User" / "globalStorage" / extension_id)
    return list(dict.fromkeys(roots))


def _is_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _names(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _holds_records(folder: Path) -> bool:
    """A task folder or an SDK session folder: it holds a file this module reads."""
    return any(n in TASK_FILES or n.endswith(MESSAGES_SUFFIX) for n in _names(folder))


def is_store(folder: Path) -> bool:
    """Whether ``folder`` is a store this module can list: an extension storage or Cline data
    folder, a ``tasks``/``sessions`` folder, or one task or session folder."""
    if not _is_dir(folder):
        return False
    if _is_dir(folder / "tasks") or _is_dir(folder / "sessions") or (folder / "state" / "taskHistory.json").is_file():
        return True
    if _holds_records(folder):
        return True
    return any(_holds_records(folder / n) for n in _names(folder) if _is_dir(folder / n))


def resolve_store(path: Path, extension_ids: Iterable[str], data_dirs: Iterable[str] = ()) -> Path:
    """Turn what a user passes as ``--root`` into a store folder or a single file.

    Accepted: one JSON file; a store folder (see ``is_store``); a folder holding one of
    ``data_dirs`` (``~/.cline`` → ``data``); a VS Code user-data folder, its ``User`` or
    ``globalStorage`` folder (→ the extension's storage below it)."""
    if path.is_file():
        if path.suffix == ".json":
            return path
        raise RootError(f"{path} is not a JSON file of a task or session")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if is_store(path):
        return path
    for sub in data_dirs:
        if is_store(path / sub):
            return path / sub
    for ext in extension_ids:
        for cand in (path / "User" / "globalStorage" / ext, path / "globalStorage" / ext, path / ext):
            if is_store(cand):
                return cand
    raise RootError(f"{path} holds no task or session files")


# --- listing -----------------------------------------------------------------------------------

def classify(path: Path, source: str, root: Path) -> SourceFile | None:
    """A file of a store, by its name and place only; None when it is not read."""
    name = path.name
    if name in TASK_FILES:
        return SourceFile(source, path, root, session_hint=path.parent.name, container="json")
    if name == "taskHistory.json":
        return SourceFile(source, path, root, container="json")
    if name.endswith(MESSAGES_SUFFIX):
        sid = name[: -len(MESSAGES_SUFFIX)]
        return SourceFile(source, path, root, session_hint=sid if sid == path.parent.name else None,
                          container="json")
    # an SDK manifest: sessions/<id>/<id>.json, beside its messages document
    if path.suffix == ".json" and path.stem == path.parent.name \
            and (path.parent / (path.stem + MESSAGES_SUFFIX)).exists():
        return SourceFile(source, path, root, session_hint=path.stem, container="json")
    return None


def single(path: Path, source: str) -> SourceFile:
    """A file given alone as root: classified like in a store, else read by its shape."""
    sf = classify(path, source, path.parent)
    return sf or SourceFile(source, path, path.parent, container="json")


def walk(root: Path, source: str) -> Iterator[SourceFile]:
    """Every file of the store under ``root`` this module reads, in a stable order; symlinks
    are not followed and checkpoint repositories are not entered."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        folder = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in PRUNE)
        for name in sorted(filenames):
            sf = classify(folder / name, source, root)
            if sf is not None:
                yield sf


# --- lines -------------------------------------------------------------------------------------

def dump(obj) -> bytes:
    """Compact JSON; a lone surrogate (which JSON text cannot carry) becomes U+FFFD."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")


def json_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """The JSON lines of a private copy of one JSON file of a task or session.

    A file that is not JSON is yielded whole, so it is quarantined with its bytes; JSON that
    is not an object or array is yielded as is (quarantined as not an object)."""
    kind = TASK_FILES.get(file.path.name)
    sdk_name = file.path.name.endswith(MESSAGES_SUFFIX)
    if copy.stat().st_size >= STREAM_BYTES:
        opening = json_stream.opening(copy)
        # (a file that is not UTF-8 is quarantined whole, below, as it always was)
        if opening == b"[" and json_stream.is_text(copy):
            torn: list[json_stream.Torn] = []
            yield from _array_lines(json_stream.until_torn(json_stream.array_items(copy), torn), kind)
            for t in torn:
                yield malformed_row(f"{file.path.name} after element {t.count}", t.error, t.rest)
            return
        rest = json_stream.members_without(copy, "messages") if opening == b"{" else None
        if rest is not None:
            yield from _message_lines(rest, json_stream.member_items(copy, "messages"), sdk_name)
            return
    data = copy.read_bytes()
    if not data.strip():
        return
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        items, rest = json_stream.salvage_array(data)
        if items is None:
            yield data
            return
        # a torn array (the extensions rewrite these files in place): its complete elements
        # load, the rest is quarantined
        yield from _array_lines(items, kind)
        yield malformed_row(f"{file.path.name} after element {len(items)}", str(exc), rest)
        return
    if isinstance(doc, list):
        yield from _array_lines(doc, kind)
    elif isinstance(doc, dict):
        yield from _object_lines(doc, kind, sdk_name)
    else:
        yield dump(doc)


def _shape(item) -> str:
    """What an array element is, by its keys: API message, UI message or HistoryItem."""
    if not isinstance(item, dict):
        return "unknown"
    if "role" in item or item.get("type") == "reasoning":
        return "api_message"
    if item.get("type") in ("say", "ask"):
        return "ui_message"
    if "id" in item and "task" in item:
        return "history_item"
    return "unknown"


def _array_lines(items: Iterable, kind: str | None) -> Iterator[bytes]:
    items = iter(items)
    head = list(itertools.islice(items, 50))
    if kind == "api" or any(_shape(i) == "api_message" for i in head):
        yield from _api_lines(itertools.chain(head, items), "anthropic")
        return
    for i, item in enumerate(itertools.chain(head, items)):
        rec = _shape(item)
        line = {"rec": rec, "index": i, "item": item}
        if rec == "history_item":
            line["session_id"] = item.get("id")
        yield dump(line)


def _object_lines(doc: dict, kind: str | None, sdk_name: bool) -> Iterator[bytes]:
    messages = doc.get("messages")
    if isinstance(messages, list):
        yield from _message_lines({k: v for k, v in doc.items() if k != "messages"}, messages, sdk_name)
        return
    if "session_id" in doc and ("started_at" in doc or "messages_path" in doc):
        yield dump({"rec": "manifest", "session_id": doc.get("session_id"), "item": doc})
        return
    if isinstance(doc.get("entries"), list):          # Roo's tasks/_index.json, given alone
        for i, item in enumerate(doc["entries"]):
            yield dump({"rec": "history_item", "index": i,
                        "session_id": item.get("id") if isinstance(item, dict) else None, "item": item})
        return
    sections = [k for k in ("files_in_context", "model_usage", "environment_history") if isinstance(doc.get(k), list)]
    if kind == "meta" or sections:
        for section in sections:
            for i, item in enumerate(doc[section]):
                yield dump({"rec": "task_metadata", "section": section, "index": i, "item": item})
        return
    if "id" in doc and "task" in doc:
        yield dump({"rec": "history_item", "session_id": doc.get("id"), "item": doc})
        return
    yield dump({"rec": "unknown", "item": doc})


def _message_lines(rest: dict, messages: Iterable, sdk_name: bool) -> Iterator[bytes]:
    """A document of messages: `rest` is the document without its `messages` array."""
    if sdk_name or "sessionId" in rest or "agent" in rest:
        sid = rest.get("sessionId") if isinstance(rest.get("sessionId"), str) else None
        yield dump({"rec": "transcript", "session_id": sid, "item": rest})
        for i, m in enumerate(messages):
            yield dump({"rec": "sdk_message", "session_id": sid, "index": i, "item": m})
    else:                                     # Roo's versioned RooMessage history
        yield from _api_lines(messages, f"v{rest.get('version')}")


# --- API history and its XML tool calls ---------------------------------------------------------

#: Tools Cline and Roo Code (and so Kilo Code) defined while calls were XML in the text.
XML_TOOLS = frozenset({
    "execute_command", "read_file", "write_to_file", "replace_in_file", "apply_diff", "insert_content",
    "search_and_replace", "search_files", "list_files", "list_code_definition_names", "codebase_search",
    "browser_action", "use_mcp_tool", "access_mcp_resource", "ask_followup_question", "attempt_completion",
    "plan_mode_respond", "act_mode_respond", "new_task", "switch_mode", "fetch_instructions",
    "load_mcp_documentation", "condense", "summarize_task", "report_bug", "new_rule", "web_fetch",
    "web_search", "update_todo_list", "run_slash_command", "generate_image", "edit_file", "focus_chain",
})
_CALL = re.compile(r"<(" + "|".join(sorted(XML_TOOLS)) + r")>(.*?)</\1>", re.DOTALL)
_PARAM = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>(.*?)</\1>", re.DOTALL)
_RESULT = re.compile(r"^\[([a-z_]+)(?: for .*?)?\] Result:", re.DOTALL)
_ERRORS = ("The tool execution failed", "[ERROR]", "The user denied this operation")


def _texts(content) -> list[tuple[int, str]]:
    if isinstance(content, str):
        return [(0, content)]
    if not isinstance(content, list):
        return []
    return [(i, b["text"]) for i, b in enumerate(content)
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]


def _has_native_tools(content) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "tool-call", "tool_result", "tool-result")
        for b in content)


def _xml_calls(text: str, index: int) -> list[dict]:
    calls = []
    for n, m in enumerate(_CALL.finditer(text)):
        params = {p.group(1): p.group(2).strip("\n") for p in _PARAM.finditer(m.group(2))}
        calls.append({"type": "tool_use", "id": f"xml:{index}:{n}", "name": m.group(1), "input": params, "xml": True})
    return calls


def _xml_results(content, pending: list[dict]) -> list[dict]:
    """Markers for the results answering ``pending`` calls in a user message's text blocks."""
    if not isinstance(content, list):
        return []
    texts = _texts(content)
    heads = [(i, _RESULT.match(t).group(1)) for i, t in texts if _RESULT.match(t)]
    out = []
    open_calls = list(pending)
    for k, (i, name) in enumerate(heads):
        call = next((c for c in open_calls if c["name"] == name), None)
        if call is None:
            continue
        open_calls.remove(call)
        end = heads[k + 1][0] if k + 1 < len(heads) else len(content)
        body = "\n".join(t for j, t in texts if i < j < end and not t.startswith("<environment_details>"))
        out.append({"type": "tool_result", "tool_use_id": call["id"], "xml": True, "from": i + 1, "to": end,
                    "is_error": body.lstrip().startswith(_ERRORS[:2]) or _ERRORS[2] in body})
    return out


def _api_lines(messages: Iterable, fmt: str) -> Iterator[bytes]:
    pending: list[dict] = []
    for i, m in enumerate(messages):
        line = {"rec": "api_message", "format": fmt, "index": i, "item": m}
        if isinstance(m, dict) and not _has_native_tools(m.get("content")):
            if m.get("role") == "assistant":
                calls = [c for _, t in _texts(m.get("content")) for c in _xml_calls(t, i)]
                for n, c in enumerate(calls):
                    c["id"] = f"xml:{i}:{n}"
                if calls:
                    line["xml_blocks"] = calls
                pending = calls
            elif m.get("role") == "user":
                results = _xml_results(m.get("content"), pending)
                if results:
                    line["xml_blocks"] = results
                pending = []
        yield dump(line)
