"""Amp threads, Continue sessions and Gemini CLI's legacy sessions are single JSON documents
that a long session grows to tens or hundreds of megabytes. From STREAM_BYTES on, each is
read with its other members first and then a message at a time (adapters/_json_stream.py),
and must give exactly the lines a whole parse gives; what the streaming parser cannot read the
same way (NaN, integers beyond 64 bits, a BOM, duplicated members, torn or trailing bytes) is
parsed whole, as before."""
from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from convarch.adapters import _json_stream, amp, continue_dev, gemini_cli
from convarch.adapters.base import SourceFile
from conftest import PEER, REPO

ADAPTERS = {"amp": (amp, "messages"), "continue_dev": (continue_dev, "history"),
            "gemini_cli": (gemini_cli, "messages")}

_SAMPLES = {
    "amp": sorted((REPO / "fixtures" / "amp" / "contract" / "threads").glob("*.json")),
    "continue_dev": sorted(p for p in (REPO / "fixtures" / "continue_dev" / "contract" / "sessions").glob("*.json")
                           if p.name != "sessions.json"),
    "gemini_cli": [next((REPO / "fixtures" / "gemini_cli" / "contract").rglob("session-*.json")),
                   *sorted((PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents"
                            / "gemini").glob("*.json")),
                   *sorted((PEER / "portable-resume" / "gemini").glob("*/fixture.json"))],
}


def _edge_cases(key: str) -> dict[str, tuple[bytes, bool]]:
    """name -> (document, streamed): the documents each adapter must read the same both ways."""
    items = [{"role": "user", "content": "hello", "id": "m1", "message": {"role": "user", "content": "hello"}},
             {"role": "assistant", "content": [{"type": "text", "text": "ünïcode ✓"}], "id": "m2",
              "message": {"role": "assistant", "content": "hi"}, "n": 1.5e-7}]
    body = json.dumps(items).encode()
    return {
        "members after": (b'{"sessionId": "s1", "%s": %s, "title": "t", "extra": {"a": [1, {"b": null}]}}'
                          % (key.encode(), body), True),
        "empty": (b'{"sessionId": "s1", "%s": []}' % key.encode(), True),
        "NaN": (b'{"sessionId": "s1", "%s": [{"id": "m1", "x": NaN}]}' % key.encode(), False),
        "big integer": (b'{"sessionId": "s1", "n": 123456789012345678901234567890, "%s": %s}'
                        % (key.encode(), body), False),
        "twice": (b'{"%s": [], "sessionId": "s1", "%s": %s}' % (key.encode(), key.encode(), body), False),
        "not an array": (b'{"sessionId": "s1", "%s": null}' % key.encode(), False),
        "BOM": (b"\xef\xbb\xbf" + b'{"sessionId": "s1", "%s": %s}' % (key.encode(), body), False),
        "trailing bytes": (b'{"sessionId": "s1", "%s": %s} x' % (key.encode(), body), False),
        "torn": ((b'{"sessionId": "s1", "%s": %s}' % (key.encode(), body))[:-12], False),
    }


def _lines(adapter, path: Path) -> list[bytes] | str:
    """The adapter's lines of a document, or the error that makes it one quarantined container."""
    file = SourceFile(adapter.NAME, path, path.parent, session_hint=path.stem, container="json")
    try:
        return list(adapter.to_lines(path, file))
    except Exception as exc:  # noqa: BLE001 - the container would be quarantined with this
        return f"{type(exc).__name__}: {exc}"


def _both_ways(adapter, path: Path, monkeypatch) -> tuple[list | str, list | str, int]:
    whole = _lines(adapter, path)
    calls = []
    real = _json_stream.member_items
    with monkeypatch.context() as m:
        m.setattr(adapter, "STREAM_BYTES", 0)
        m.setattr(_json_stream, "member_items", lambda *a: calls.append(a) or real(*a))
        streamed = _lines(adapter, path)
    return whole, streamed, len(calls)


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_sample_documents_give_the_same_lines_streamed(tmp_path, monkeypatch, name):
    adapter, _key = ADAPTERS[name]
    assert _SAMPLES[name]
    streamed_any = False
    for sample in _SAMPLES[name]:
        path = tmp_path / sample.name
        path.write_bytes(sample.read_bytes())
        whole, streamed, calls = _both_ways(adapter, path, monkeypatch)
        assert streamed == whole, sample
        streamed_any |= calls > 0
    assert streamed_any, "no sample took the streamed path"


@pytest.mark.parametrize("case", sorted(_edge_cases("messages")))
@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_edge_cases_give_the_same_lines_streamed_or_are_parsed_whole(tmp_path, monkeypatch, name, case):
    adapter, key = ADAPTERS[name]
    data, streams = _edge_cases(key)[case]
    path = tmp_path / "session-2026-01-01T00-00-aaaa.json"
    path.write_bytes(data)
    whole, streamed, calls = _both_ways(adapter, path, monkeypatch)
    assert streamed == whole
    assert (calls > 0) == streams


def _big(key: str, mb: int) -> dict:
    items = []
    for i in range(mb * 10):
        items.append({"id": f"m{i}", "type": "user" if i % 2 else "gemini", "role": "user" if i % 2 else "assistant",
                      "content": f"line {i} ünïcode " * 5000,
                      "message": {"role": "user" if i % 2 else "assistant", "content": f"reply {i}"}})
    return {"sessionId": "s-big", "title": "a long session", key: items}


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_big_document_is_read_in_memory_of_a_message_not_the_document(tmp_path, name):
    """A document over STREAM_BYTES (default threshold): tracemalloc counts the Python objects;
    parsed whole they were more than its size."""
    adapter, key = ADAPTERS[name]
    path = tmp_path / "session-2026-01-01T00-00-bbbb.json"
    path.write_text(json.dumps(_big(key, 24), ensure_ascii=False))
    size = path.stat().st_size
    assert size > adapter.STREAM_BYTES
    file = SourceFile(adapter.NAME, path, tmp_path, session_hint=path.stem, container="json")
    tracemalloc.start()
    try:
        n = sum(1 for _ in adapter.to_lines(path, file))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 240 + 1
    assert peak < size / 8, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB document"
