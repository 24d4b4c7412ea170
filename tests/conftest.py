"""Every test runs with a throwaway HOME and warehouse: nothing touches the real home."""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PEER = REPO.parent / "shared" / "peer-fixtures"
DEMO = REPO / "fixtures" / "claude_code" / "demo"


@functools.cache
def contract_builder(source: str):
    """The module fixtures/<source>/build_contract.py, which writes that agent's contract store
    (a database or tree made by code, not kept as binary files), loaded once."""
    spec = importlib.util.spec_from_file_location(f"{source}_build", REPO / "fixtures" / source / "build_contract.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    from convarch import adapters

    for var in {"CONVARCH_DB", *(v for a in adapters.ADAPTERS.values() for v in a.ENV_VARS)}:
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(autouse=True, scope="session")
def settled_stores():
    """A test's stores are read as stores last written long ago: a damaged document a test
    has just written is bad input to quarantine, not a write still going on. The tests of a
    write caught half done (tests/test_snapshot.py, tests/test_whole_rewrites.py) set the
    window back."""
    from convarch.etl import settled

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(settled, "WRITING_SECONDS", 0.0)
        yield


def tree_fingerprint(root: Path) -> dict[str, tuple]:
    """Bytes, mtime, inode and mode of every file under root."""
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            p = Path(dirpath) / name
            st = os.lstat(p)
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else None
            out[str(p.relative_to(root))] = (digest, st.st_mtime_ns, st.st_ino, st.st_mode, st.st_size)
    return out


def jsonl_objects(path: Path) -> list[dict]:
    """An independent reading of a JSONL file: every line that parses as an object."""
    objs = []
    for raw in path.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(value, dict):
            objs.append(value)
    return objs


def write_jsonl(path: Path, records: list, *, trailing_newline: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records)
    path.write_text(body + ("\n" if trailing_newline else ""))
