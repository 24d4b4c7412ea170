"""Claude Code: one JSONL transcript per session under ``projects/<cwd-slug>/``.

Evidence: formats.md §2 and claude-chain.md §1 (Claude Code's own session storage, read from a
published source snapshot), checked against the samples in shared/peer-fixtures.

Layout handled:
- ``projects/<slug>/<session>.jsonl``: a main session; the file stem is the session id, since
  the file is Claude Code's own load unit (copied records in resumed files keep foreign
  ``sessionId`` values, so the field is not a key).
- ``projects/<slug>/<session>/subagents/agent-<id>.jsonl`` (2.x, with ``.meta.json`` beside it)
  and ``…/subagents/workflows/<run>/agent-<id>.jsonl``: a subagent session
  ``<session>/agent-<id>`` whose parent is ``<session>``; its ``.meta.json`` (agent type,
  description) is read as one metadata record of that session.
- ``projects/<slug>/agent-<id>.jsonl`` (2.0.x flat layout): a subagent whose parent is only
  known from its records' ``sessionId``; the extraction SQL fills it in.

Parsing is the SQL in ``sql/extract/claude_code__*.sql``.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "claude_code"
TITLE = "Claude Code"
ENV_VARS = ("CLAUDE_CONFIG_DIR",)
#: Each transcript's records are ordered and linked within the file (a subagent's or a resumed
#: session's file included), so new files may be numbered in the order they were last written.
FILES_STAND_ALONE = True
EXTRACT = Extract(records="extract/claude_code__records", blocks="extract/claude_code__blocks",
                  one_parsed_row_per_line=True)


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$CLAUDE_CONFIG_DIR`` when set, plus the two home locations Claude Code has used."""
    roots: list[Path] = []
    if env.get("CLAUDE_CONFIG_DIR"):
        roots.append(Path(env["CLAUDE_CONFIG_DIR"]).expanduser())
    roots.append(home / ".claude")
    xdg = env.get("XDG_CONFIG_HOME")
    roots.append((Path(xdg) if xdg else home / ".config") / "claude")
    return roots


def resolve_root(path: Path) -> Path:
    """Accept the config dir (holding ``projects/``), ``projects/`` itself, one project
    folder, or a single transcript file."""
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
    """Every transcript under ``root``, classified by its place in the tree.

    Symlinks are not followed: a store is read only where it lives.
    """
    if root.is_file():
        yield _classify(root, root.parent)
        return
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        folder = Path(dirpath)      # once a folder: a Path parsed per file was half of listing 20,000
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".jsonl"):
                yield _classify(folder / name, root)
            elif name.startswith("agent-") and name.endswith(".meta.json"):
                meta = _classify(folder / name[: -len(".meta.json")], root)
                if meta.parent_session_hint:
                    yield SourceFile(NAME, folder / name, root, meta.session_hint,
                                     meta.parent_session_hint, container="json")


def _classify(path: Path, root: Path) -> SourceFile:
    stem = path.stem
    if not stem.startswith("agent-"):
        return SourceFile(NAME, path, root, session_hint=stem)
    parts = path.relative_to(root).parts if path != root else (path.name,)
    # <session>/subagents/[workflows/<run>/]agent-<id>.jsonl
    if "subagents" in parts:
        i = parts.index("subagents")
        if i >= 1:
            parent = parts[i - 1]
            return SourceFile(NAME, path, root, f"{parent}/{stem}", parent)
    return SourceFile(NAME, path, root, session_hint=None, parent_session_hint=None)
