"""Aider (Aider-AI/aider): a Markdown log, ``.aider.chat.history.md``, in the root of each
repository aider ran in. There is no global store, so the files are found per repository.

Evidence followed (formats.md §12, confidence S F; aider's ``aider/io.py`` as stored in the
search index):
- Where: the git root of the project (the working folder outside git), named by
  ``--chat-history-file`` / ``$AIDER_CHAT_HISTORY_FILE`` (default ``.aider.chat.history.md``).
- Writing (``InputOutput``): every start appends ``\\n# aider chat started at YYYY-MM-DD
  HH:MM:SS\\n\\n`` (local time, no zone); ``user_input`` writes each input line as ``#### line``
  joined by Markdown hard breaks (two trailing spaces), ``<blank>`` for an empty input;
  ``ai_output`` writes the reply as plain Markdown between blank lines; ``tool_output`` /
  ``tool_warning`` / ``tool_error`` and the answers to ``confirm_ask`` / ``prompt_ask`` write
  blockquote lines ``> text`` with a hard break. Aider's own lines therefore end in two
  spaces; when a file has any such line, only ``####`` / ``>`` lines ending so are aider's
  (a reply's Markdown heading or quote is not), otherwise (trailing spaces stripped) any such
  line outside a reply's code fence is.
- Facts in the log: ``> Aider v0.86.1``, ``> Main model: <model> with <format> edit format``
  (``Model:`` in older versions; again after ``/model``), ``> Tokens: 4.3k sent, 1.2k cache
  write, 3k cache hit, 210 received. Cost: …`` (k/M-rounded, so approximate; the format of
  aider's ``base_coder`` usage report, second-hand).

Discovery: ``--root`` may name a history file, a repository holding one, or any folder,
which is searched for ``.aider.chat.history.md`` files up to 3 folder levels below it
(hidden and dependency/build folders skipped, symlinks not followed, at most 5000 folders).
By default: ``$AIDER_CHAT_HISTORY_FILE`` when it names an absolute file, the common project
folders under HOME (``~/src``, ``~/code``, ``~/projects``, ``~/dev``, ``~/repos``, ``~/git``,
``~/work``, ``~/workspace``, … searched 3 levels deep) and the folders directly in HOME (one
level). A repository elsewhere must be named with ``--root``.

Container: the Markdown file is registered as a ``json`` container (read whole whenever it
changes) and ``to_lines`` turns the whole file into one JSON line per session header and per
message, in file order: ``session`` (session id = ``<repository folder>@<start time>``,
with the aider version and first model of that session), ``user`` (a run of ``####``
lines), ``assistant`` (the text between aider's lines) and ``tool_output`` (a run of ``>``
lines; token counts parsed). Nothing is lost: each line keeps its verbatim Markdown
(``markdown``) and its line numbers; text before the first header becomes a session
``<repository>@unknown``; text aider did not mark belongs to the reply around it. Only the
header has a time: it is local time, turned to UTC with this machine's time zone (the zone
the log was most likely written in), and every message of the session carries it.
Parsing of the lines is the SQL in ``sql/extract/aider__*.sql``. The ``.aider.input.history``
prompt log (per-prompt times) and ``--llm-history-file`` are not read.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "aider"
TITLE = "Aider"
ENV_VARS = ("AIDER_CHAT_HISTORY_FILE",)
EXTRACT = Extract(records="extract/aider__records", blocks="extract/aider__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True

HISTORY = ".aider.chat.history.md"
PROJECT_DIRS = ("src", "code", "dev", "Developer", "projects", "Projects", "repos", "git", "work", "workspace",
                "Documents/GitHub")
SEARCH_DEPTH = 3
HOME_DEPTH = 1
MAX_DIRS = 5000
SKIP_DIRS = {"node_modules", "__pycache__", "venv", "env", "site-packages", "dist", "build", "target",
             "vendor", "Library", "Applications", "Pictures", "Music", "Movies", "snap"}

HEADER = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
VERSION = re.compile(r"^Aider v(\S+)")
MODEL = re.compile(r"^(?:Main model|Model): (\S+)(?: (?:with|using) (\S+) edit format)?")
NUMBER = r"([\d.,]+[kKmM]?)"
TOKENS = re.compile(rf"Tokens: {NUMBER} sent(?:, {NUMBER} cache write)?(?:, {NUMBER} cache hit)?, {NUMBER} received")
COST = re.compile(r"Cost: \$([\d.,]+) message, \$([\d.,]+) session")


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$AIDER_CHAT_HISTORY_FILE`` (absolute), the usual project folders, then HOME itself."""
    roots: list[Path] = []
    named = env.get("AIDER_CHAT_HISTORY_FILE")
    if named and Path(named).expanduser().is_absolute():
        roots.append(Path(named).expanduser())
    roots.extend(home / d for d in PROJECT_DIRS)
    roots.append(home)
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept a history file, a repository holding one, or a folder to search."""
    if path.is_file():
        if path.suffix == ".md":
            return path
        raise RootError(f"{path} is not an aider chat history (.md) file")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if os.path.lexists(path / HISTORY) or next(iter(discover(path)), None) is not None:
        return path
    raise RootError(f"{path} holds no {HISTORY} within {_depth(path)} folder level(s)")


def _home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def _depth(root: Path) -> int:
    """HOME itself is searched one level deep (repositories directly in it); any other
    folder three levels."""
    try:
        return HOME_DEPTH if root.resolve() == _home().resolve() else SEARCH_DEPTH
    except OSError:
        return SEARCH_DEPTH


def discover(root: Path) -> Iterator[SourceFile]:
    """History files at or below `root` (bounded; see the module docstring)."""
    if root.is_file():
        yield SourceFile(NAME, root, root.parent, container="json")
        return
    depth = _depth(root)
    visited = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        visited += 1
        here = Path(dirpath)
        level = len(here.relative_to(root).parts)
        if HISTORY in filenames:
            yield SourceFile(NAME, here / HISTORY, root, container="json")
        if level >= depth or visited >= MAX_DIRS:
            dirnames[:] = []
        else:
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)


# --- the Markdown log ----------------------------------------------------------------------

def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """One JSON line per session header and per message of the whole log."""
    text = copy.read_bytes().decode("utf-8", "replace")
    for record in parse(text, str(file.path.parent)):
        yield json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _count(token: str | None) -> int | None:
    if not token:
        return None
    t = token.replace(",", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(t[-1].lower(), 1)
    try:
        return round(float(t.rstrip("kKmM")) * scale)
    except ValueError:
        return None


def _utc(local: str) -> tuple[str, str]:
    """A naive local header time as UTC ISO text, with the offset used."""
    aware = datetime.strptime(local, "%Y-%m-%d %H:%M:%S").astimezone()
    offset = aware.strftime("%z")
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), f"{offset[:3]}:{offset[3:]}"


def parse(text: str, repo: str) -> list[dict]:
    """Records of one aider chat history (see the module docstring)."""
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    strict = any((ln.startswith("####") or ln.startswith(">")) and ln.endswith("  ") for ln in lines)

    def marker(ln: str, in_fence: bool) -> str | None:
        if ln.startswith("#### ") or ln.rstrip() == "####":
            kind = "user"
        elif ln.startswith("> ") or ln.rstrip() == ">":
            kind = "tool_output"
        else:
            return None
        if strict:
            return kind if ln.endswith("  ") else None
        return None if in_fence else kind

    out: list[dict] = []
    session: dict | None = None
    seen_ids: dict[str, int] = {}
    current: dict | None = None        # the message being collected
    in_fence = False
    model: str | None = None

    def open_session(line_no: int, started: str | None, header: str | None) -> dict:
        base = f"{repo}@{started or 'unknown'}"
        n = seen_ids.get(base, 0) + 1
        seen_ids[base] = n
        rec = {"type": "session", "session_id": base if n == 1 else f"{base}#{n}", "repo": repo,
               "line": line_no, "end_line": line_no, "started_at": started, "timestamp": None, "utc_offset": None,
               "markdown": header}
        if started:
            rec["timestamp"], rec["utc_offset"] = _utc(started)
        out.append(rec)
        return rec

    def flush() -> None:
        nonlocal current, model
        if current is None:
            return
        msg, current = current, None
        raw = msg.pop("raw")
        if msg["type"] == "assistant":
            while raw and not raw[-1][1].strip():
                raw.pop()
            if not raw:
                return
            body = [ln for _, ln in raw]
            msg["model"] = model
        elif msg["type"] == "user":
            body = [_unmark(ln, "####") for _, ln in raw]
        else:
            body = [_unmark(ln, ">") for _, ln in raw]
            _tool_facts(msg, session, body)
            model = msg.get("model") or model
        msg["line"], msg["end_line"] = raw[0][0], raw[-1][0]
        msg["text"] = "\n".join(body)
        msg["markdown"] = "\n".join(ln for _, ln in raw)
        out.append(msg)

    for no, ln in enumerate(lines, start=1):
        prev_blank = no == 1 or not lines[no - 2].strip()
        head = HEADER.match(ln) if prev_blank else None
        if head:
            flush()
            in_fence = False
            model = None
            session = open_session(no, head.group(1), ln)
            continue
        kind = marker(ln, in_fence)
        if kind is not None:
            if session is None:
                session = open_session(no, None, None)
            if current is None or current["type"] != kind or current["raw"][-1][0] != no - 1:
                flush()
                current = _message(kind, session)
            current["raw"].append((no, ln))
            continue
        if not ln.strip():
            if current is not None and current["type"] == "assistant":
                current["raw"].append((no, ln))
            else:
                flush()
            continue
        if session is None:
            session = open_session(no, None, None)
        if current is None or current["type"] != "assistant":
            flush()
            current = _message("assistant", session)
        if FENCE.match(ln):
            in_fence = not in_fence
        current["raw"].append((no, ln))
    flush()
    return out


def _message(kind: str, session: dict) -> dict:
    return {"type": kind, "session_id": session["session_id"], "repo": session["repo"],
            "timestamp": session["timestamp"], "started_at": session["started_at"], "raw": []}


def _unmark(ln: str, prefix: str) -> str:
    """A line without aider's prefix and without the hard break aider added."""
    body = ln[len(prefix):]
    if body.startswith(" "):
        body = body[1:]
    return body[:-2] if body.endswith("  ") else body.rstrip()


def _tool_facts(msg: dict, session: dict | None, body: list[str]) -> None:
    """Version, model and token counts aider reports in its own lines."""
    for ln in body:
        if m := VERSION.match(ln):
            msg["aider_version"] = m.group(1)
            if session is not None and not session.get("aider_version"):
                session["aider_version"] = m.group(1)
        if m := MODEL.match(ln):
            msg["model"], msg["edit_format"] = m.group(1), m.group(2)
            if session is not None and not session.get("model"):
                session["model"], session["edit_format"] = m.group(1), m.group(2)
        if m := TOKENS.search(ln):
            msg["tokens"] = {"sent": _count(m.group(1)), "cache_write": _count(m.group(2)),
                             "cache_hit": _count(m.group(3)), "received": _count(m.group(4))}
        if m := COST.search(ln):
            msg["cost"] = {"message": m.group(1), "session": m.group(2)}
