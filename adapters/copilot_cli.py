"""GitHub Copilot CLI (``copilot``): one JSONL event log per session under ``~/.copilot``.

Copilot CLI is closed source. Evidence followed (formats.md §14, confidence R F):
- Where: GitHub's "CLI config dir reference" documents ``~/.copilot`` holding
  ``session-state/`` (session history) and ``session-store.db`` (cross-session data).
  ``COPILOT_HOME`` moves that whole folder (github/copilot-cli issue #1954; read the same way
  by ccusage, kaizen and resume-skills). Builds up to 0.0.421 put it under
  ``$XDG_CONFIG_HOME/.copilot`` when that variable was set (same issue), so that folder is
  probed too.
- Layouts, newest first (agent-sessions notes "flat → subdirs at 1.0"; third-party readers
  franken_agent_detection, ccusage, vct-core):
  1. ``session-state/<id>/events.jsonl`` (≥ 1.0), with ``workspace.yaml`` beside it
     (``id``, ``cwd``, ``summary`` = the session's title, ``created_at``, ``updated_at``; read
     as one metadata record) and ``checkpoints/``, ``files/`` (not read);
  2. ``session-state/<id>.jsonl`` (0.0.342 … < 1.0), the same events in a flat file; when
     ``<id>/events.jsonl`` exists too the flat file is left out (the folder is the newer
     copy of the same session);
  3. ``history-session-state/<name>.json`` (< 0.0.342): one pretty-printed document
     ``{sessionId, startTime, chatMessages: [OpenAI-style messages], timeline: [{id,
     timestamp, type: user|copilot|info|tool_call_requested|tool_call_completed, text,
     callId, name, toolTitle, arguments, result{type, log}}]}`` (shape from third-party
     readers: rust analyzers that keep the legacy path, promptimizer's test; no sample).
     ``to_lines`` turns it into one header line (type ``session``), then one line per
     timeline entry (their own ``type``), or, when there is no timeline, one ``chat_message``
     line per chat message; each line carries ``_session`` (the document's ``sessionId``).
  ``session-store.db`` is only an index ("Chronicle" search) and is not read, nor are
  ``command-history-state``, ``logs/`` and ``otel/``.
- Events: ``{type, data, id, parentId, timestamp (ISO)}``. ``session.start{sessionId,
  copilotVersion, selectedModel, context{cwd, gitRoot, branch, repository}}``,
  ``session.resume``/``session.context_changed`` (new context), ``session.model_change
  {newModel}``, ``user.message{content, transformedContent, attachments}``,
  ``assistant.message{messageId, content, toolRequests[{toolCallId, name, arguments}],
  reasoningText, outputTokens, parentToolCallId}``, ``assistant.reasoning{content}``,
  ``tool.execution_start{toolCallId, toolName, arguments}``, ``tool.execution_complete
  {toolCallId, success, result{content} | result as text, error{message}}``,
  ``system.message``, ``session.shutdown{modelMetrics{<model>: {usage{inputTokens,
  outputTokens, cacheReadTokens, cacheWriteTokens}}}, tokenDetails, currentModel}`` and
  bookkeeping events (turns, hooks, subagents, truncation, usage checkpoints, abort …).

Mapping (``sql/extract/copilot_cli__*.sql``): one row per event. A call is linked to its
result by ``toolCallId``; ``tool.execution_start`` adds the call only when no
``assistant.message`` of the same batch requested it (some logs have a start without a
request). Subagent traffic (``parentToolCallId``) stays in its session, marked
``is_sidechain`` with ``agent_id`` = the spawning call. Tokens: ``output_tokens`` per
assistant message; input and cache tokens only exist as per-session totals in
``session.shutdown`` (kind 'session_shutdown', summed over ``modelMetrics``; its output is
left out so it is not counted twice). ``inputTokens`` there include the cache reads and
writes (as the vct-core and ccusage readers document), so ``input_tokens`` keeps the uncached
rest; the older ``tokenDetails`` form is taken as it stands. The session id is the folder or
file name (= ``session.start.data.sessionId``).
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "copilot_cli"
TITLE = "GitHub Copilot CLI"
ENV_VARS = ("COPILOT_HOME",)
EXTRACT = Extract(records="extract/copilot_cli__records", blocks="extract/copilot_cli__blocks",
                  context="extract/copilot_cli__context")

STATE = "session-state"
LEGACY = "history-session-state"
EVENTS = "events.jsonl"
WORKSPACE = "workspace.yaml"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$COPILOT_HOME``, then ``~/.copilot``, then ``$XDG_CONFIG_HOME/.copilot`` (old builds)."""
    roots: list[Path] = []
    if env.get("COPILOT_HOME"):
        roots.append(Path(env["COPILOT_HOME"]).expanduser())
    roots.append(home / ".copilot")
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg and Path(xdg).is_absolute():
        roots.append(Path(xdg) / ".copilot")
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept a Copilot home (``~/.copilot`` or ``$COPILOT_HOME``), its ``session-state/`` or
    ``history-session-state/`` folder, one session folder, or a single session file."""
    if path.is_file():
        if path.name == WORKSPACE or path.suffix in (".jsonl", ".json"):
            return path
        raise RootError(f"{path} is not a Copilot CLI session file (.jsonl, .json or workspace.yaml)")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if (path / STATE).is_dir() or (path / LEGACY).is_dir():
        return path
    if path.name in (STATE, LEGACY) or (path / EVENTS).is_file():
        return path
    if next(_files_in(path), None) is not None or _has_session_folders(path):
        return path
    raise RootError(f"{path} holds no Copilot CLI sessions (no session-state/ or history-session-state/)")


def discover(root: Path) -> Iterator[SourceFile]:
    """Every session file of a Copilot home, a store folder or a session folder, classified by
    its place; symlinks are not followed."""
    if root.is_file():
        sf = _classify(root, root.parent)
        if sf is not None:
            yield sf
        return
    if (root / STATE).is_dir() or (root / LEGACY).is_dir():
        for name in (STATE, LEGACY):
            if (root / name).is_dir():
                yield from _store(root / name, root, legacy=name == LEGACY)
        return
    if (root / EVENTS).is_file() or (root / WORKSPACE).is_file():
        yield from _session_folder(root, root)
        return
    yield from _store(root, root, legacy=root.name == LEGACY)


def _files_in(folder: Path) -> Iterator[os.DirEntry]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for e in entries:
        if e.name.endswith((".jsonl", ".json")) and not e.is_dir(follow_symlinks=False):
            yield e


def _has_session_folders(folder: Path) -> bool:
    try:
        return any(e.is_dir(follow_symlinks=False) and (Path(e.path) / EVENTS).is_file() for e in os.scandir(folder))
    except OSError:
        return False


def _store(folder: Path, root: Path, *, legacy: bool) -> Iterator[SourceFile]:
    """``<id>.jsonl`` / ``<name>.json`` files directly in ``folder`` and ``<id>/`` session
    folders one level down (nothing deeper: those hold checkpoints and file copies)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    folders = {e.name for e in entries if e.is_dir(follow_symlinks=False)}
    for e in entries:
        path = Path(e.path)
        if e.is_dir(follow_symlinks=False):
            if not legacy:
                yield from _session_folder(path, root)
            continue
        if legacy and e.name.endswith(".json"):
            yield SourceFile(NAME, path, root, session_hint=path.stem, container="json")
        elif not legacy and e.name.endswith(".jsonl"):
            if path.stem in folders and (folder / path.stem / EVENTS).exists():
                continue  # the folder layout is the newer copy of the same session
            yield SourceFile(NAME, path, root, session_hint=path.stem)


def _session_folder(folder: Path, root: Path) -> Iterator[SourceFile]:
    for name in (EVENTS, WORKSPACE):
        p = folder / name
        if os.path.lexists(p) and not p.is_dir():
            sf = _classify(p, root)
            if sf is not None:
                yield sf


def _classify(path: Path, root: Path) -> SourceFile | None:
    if path.name == EVENTS:
        return SourceFile(NAME, path, root, session_hint=path.parent.name)
    if path.name == WORKSPACE:
        # its own hint: the file is no copy of events.jsonl, so neither stands in for the other
        return SourceFile(NAME, path, root, session_hint=f"{path.parent.name}/{WORKSPACE}", container="json")
    if path.suffix == ".jsonl":
        return SourceFile(NAME, path, root, session_hint=path.stem)
    if path.suffix == ".json":
        return SourceFile(NAME, path, root, session_hint=path.stem, container="json")
    return None


# --- whole documents: workspace.yaml and legacy history-session-state/*.json ----------------

def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """JSON lines of a whole-document file: ``workspace.yaml`` (one ``workspace`` line) or a
    legacy ``history-session-state`` document. The document is read whole before anything is
    yielded, so a damaged one becomes one quarantined container, never a partial session."""
    data = copy.read_bytes()
    if file.path.name == WORKSPACE:
        fields = parse_flat_yaml(data.decode("utf-8"))
        yield _dump({"type": "workspace", "_session": file.path.parent.name, "data": fields})
        return
    doc = json.loads(data.decode("utf-8"))
    yield from _legacy_lines(doc, file)


def _legacy_lines(doc, file: SourceFile) -> Iterator[bytes]:
    if not isinstance(doc, dict) or not any(k in doc for k in ("timeline", "chatMessages", "sessionId")):
        raise ValueError("not a Copilot CLI session document: expected {sessionId, chatMessages, timeline}")
    sid = doc.get("sessionId") if isinstance(doc.get("sessionId"), str) and doc.get("sessionId") else file.session_hint
    header = {k: v for k, v in doc.items() if not isinstance(v, (dict, list))}
    out = [_dump({**header, "type": "session", "_legacy": "header", "_session": sid})]
    timeline = doc.get("timeline")
    chat = doc.get("chatMessages")
    if isinstance(timeline, list) and timeline:
        for entry in timeline:
            if isinstance(entry, dict):
                out.append(_dump({**entry, "_legacy": "timeline", "_session": sid}))
            else:
                out.append(_dump(entry))          # not an object: quarantined as such
    elif isinstance(chat, list):
        for message in chat:
            out.append(_dump({"type": "chat_message", "_legacy": "chat", "_session": sid, "message": message}))
    yield from out


def _dump(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?$")


def parse_flat_yaml(text: str) -> dict:
    """The top-level scalar keys of a small YAML mapping such as ``workspace.yaml``.

    Enough YAML for what Copilot writes there: ``key: value`` with plain, single- or
    double-quoted scalars, block scalars (``|``/``>`` and their chomping marks) and nested
    blocks, which are kept as their raw text. Not a general YAML reader: anything else is
    kept as the raw string rather than guessed at.
    """
    out: dict = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#") or line.startswith((" ", "\t", "-")):
            continue
        m = _KEY.match(line.rstrip())
        if not m:
            continue
        key, value = m.group(1), (m.group(2) or "").strip()
        block: list[str] = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t", "-"))):
            block.append(lines[i])
            i += 1
        while block and not block[-1].strip():
            block.pop()
        if value[:1] in ("|", ">") and re.fullmatch(r"[|>][+-]?\d?", value):
            body = _dedent(block)
            text_value = "\n".join(body) if value[0] == "|" else _fold(body)
            out[key] = text_value if value.endswith("-") else text_value + "\n"
        elif value == "" and block:
            out[key] = "\n".join(block)
        else:
            out[key] = _scalar(value, block)
    return out


def _dedent(block: list[str]) -> list[str]:
    indents = [len(b) - len(b.lstrip()) for b in block if b.strip()]
    cut = min(indents) if indents else 0
    return [b[cut:] for b in block]


def _fold(body: list[str]) -> str:
    paras, cur = [], []
    for b in body:
        if b.strip():
            cur.append(b.strip())
        else:
            paras.append(" ".join(cur))
            cur = []
    paras.append(" ".join(cur))
    return "\n".join(paras)


def _scalar(value: str, continuation: list[str]):
    if value.startswith('"'):
        raw = " ".join([value] + [c.strip() for c in continuation])
        try:
            return json.loads(raw)
        except ValueError:
            return raw.strip('"')
    if value.startswith("'"):
        raw = " ".join([value] + [c.strip() for c in continuation])
        return raw[1:-1].replace("''", "'") if raw.endswith("'") else raw[1:]
    if continuation:                      # a plain scalar folded over several lines
        value = " ".join([value] + [c.strip() for c in continuation])
    if value in ("null", "~", ""):
        return None
    if value in ("true", "false"):
        return value == "true"
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    return re.sub(r"\s+#.*$", "", value)
