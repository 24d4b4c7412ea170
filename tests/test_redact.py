"""The redactor's fast paths (substring needles before each pattern, a labelled secret's match
starting at its keyword) redact exactly what the patterns' plain definitions do."""
from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from convarch.etl import redact
from convarch.etl.redact import Redactor, redact_json_line

# the labelled-secret pattern as first written: its label's leading characters in the match
PLAIN_SECRET = (r"(?i)([\"']?[\w.-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
                r"|client[_-]?secret)[\"']?\s*[:=]\s*[\"']?)([^\s\"',;]{6,})()")


def plain_redact(text: str) -> tuple[str, Counter]:
    """Every pattern run on every text, with no needle checked first."""
    r = Redactor()
    for kind, rx, *_ in redact._COMPILED:
        text = rx.sub(r._plain(kind), text)
    for kind, rx, *_ in redact._COMPILED_LABELLED:
        if kind == "secret":
            rx = re.compile(PLAIN_SECRET)
        text = rx.sub(r._keep_label(kind), text)
    return text, r.counts


FRAGMENTS = [
    "password", "PASSWORD", "pa\u017fsword", "passwd", "secret", "Secret", "token", "TOKEN", "api_key", "api-key",
    "apikey", "access_key", "private_key", "client_secret", "KEY", "\u212aey", "mytoken.", "db.", "-", "_", "=", ":",
    " = ", ": ", '"', "'", " ", "\n", ",", ";", "abcdefgh", "abc", "hunter2hunter2", "[REDACTED:secret]",
    "authorization: bearer ", "Authorization: Token ", "aws_secret_access_key", "AWS_SECRET_ACCESS_KEY=",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "postgres://", "user:pw@", "9x://a:b@c",
    "https://hooks.slack.com/services/T0/B0/XX", "xoxb-1234567890-abc", "sk-", "sk-ant-api03-",
    "Ab12Cd34Ef56Gh78Ij90Kl12", "sk_live_", "4eC39HqLyjWDarjtT1zdp7dc", "AKIAIOSFODNN7EXAMPLE", "ghp_",
    "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "eyJhbGciOiJIUzI1NiJ9.", "eyJzdWIiOiIxMjM0NTY3ODkwIn0.",
    "dozjgNryP4J3jVmNHl0w5N", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "npm_",
    "_authToken=", "hf_", "AIza", "SG.", "glpat-", "github_pat_", "caf\u00e9", "\u043e\u0448\u0438\u0431\u043a\u0430",
    "\U0001f680", "\u0130", "\u0131",
]


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 14))) for _ in range(n)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fast_redaction_matches_the_plain_patterns(seed):
    for text in _texts(3000, seed):
        r = Redactor()
        got = r(text)
        want, counts = plain_redact(text)
        assert (got, r.counts) == (want, counts), text


@pytest.mark.parametrize("text, expected", [
    ("db.secret_token = 'abcdefgh'", "db.secret_token = '[REDACTED:secret]'"),
    ("PA\u017fSWORD: hunter2hunter2", "PA\u017fSWORD: [REDACTED:secret]"),      # a long s, as re.IGNORECASE reads it
    ("API_\u212aEY=abcdefgh1", "API_\u212aEY=[REDACTED:secret]"),                # a Kelvin sign for the k
    ("ap\u0131_key=abcdefgh1", "ap\u0131_key=[REDACTED:secret]"),                # a dotless i
    ("\u0130 client_secret: abcdefgh1", "\u0130 client_secret: [REDACTED:secret]"),  # casefold() makes it two
    ("password=short token=abcdefgh", "password=short token=[REDACTED:secret]"),
    ("tokenizer: ready", "tokenizer: ready"),
    ("nothing to see here, no labels at all", "nothing to see here, no labels at all"),
])
def test_labelled_secrets_keep_their_label(text, expected):
    assert Redactor()(text) == expected


def test_a_secret_behind_json_escapes_is_found():
    line = '{"out": "\\u0070assword=hunter2hunter2", "k": "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12"}'
    r = Redactor()
    out = redact_json_line(line, r)
    assert "hunter2hunter2" not in out and "Ab12Cd34Ef56Gh78" not in out
    assert r.counts == Counter({"openai": 1, "secret": 1})


def walk_always(line: str, redactor: Redactor) -> str:
    """redact_json_line as first written: every line's strings decoded and redacted again."""
    return redact._strings_redacted(line, redactor(line), redactor)


def _json_string(text: str, rng: random.Random) -> str:
    r"""`text` as a JSON string the way some writer might spell it: any character may be a \u
    escape (a letter of a keyword too, or half of a pair past U+FFFF), a slash may be `\/`."""
    import json

    out = ['"']
    for char in text:
        roll = rng.random()
        if roll < 0.08:
            data = char.encode("utf-16-be")
            out += ("\\u%04x" % int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
        elif char == "/" and roll < 0.5:
            out.append("\\/")
        else:
            out.append(json.dumps(char, ensure_ascii=roll < 0.7)[1:-1])
    out.append('"')
    return "".join(out)


# labels and values split by what a writer escapes (quotes, newlines, tabs), and letters that
# fold to a keyword's (a Kelvin sign, a long s, the fi ligature)
ESCAPE_FRAGMENTS = FRAGMENTS + ['"password": "', '": "', "\\", "\t", "\u001b[31m", "\u212a", "\u017f", "\ufb01",
                                "\u00df", "A\\u0070", "\r\n", "/", "password:\n", "passwd=\t", "api_\u212aey:\r\n",
                                "pa\u017fsword\f:", "\ufb01\u212aey", "client_secret\b=", "Authorization:\tBearer\n"]


def _escaped_lines(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)

    def text() -> str:
        return "".join(rng.choice(ESCAPE_FRAGMENTS) for _ in range(rng.randint(0, 10)))

    lines = []
    for _ in range(n):
        fields = [f"{_json_string(text(), rng)}:{_json_string(text(), rng)}" for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.5:
            fields.append(f'"usage":{{"input_tokens":{rng.randint(0, 999)},"list":[{_json_string(text(), rng)},null]}}')
        rng.shuffle(fields)
        lines.append("{" + ",".join(fields) + "}")
    return lines


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_a_line_whose_strings_cannot_match_is_not_walked_and_comes_out_the_same(seed):
    r"""The second pass over a line's decoded strings is left out when no pattern matches the
    line with its escapes undone; every line and count still comes out as when every line's
    strings are walked, whatever escapes the writer used (keywords spelled as \u escapes,
    quotes and slashes escaped, characters past U+FFFF as pairs)."""
    lines = _escaped_lines(3000, seed)
    for line in lines:
        want_r, got_r = Redactor(), Redactor()
        want = walk_always(line, want_r)
        got = redact_json_line(line, got_r)
        assert (got, got_r.counts) == (want, want_r.counts), line
    assert walked_lines(lines) > 0                   # lines that hold a secret are walked


@pytest.mark.parametrize("value, secret", [
    ("API_\\u212aEY:\\nabcdefgh1", "abcdefgh1"),                  # a Kelvin sign written as an escape
    ("pass\\u0077ord=abcdefgh1", "abcdefgh1"),                    # a keyword's letter written as an escape
    ("password\\n: hunter2hunter2", "hunter2hunter2"),            # a newline between label and colon
    ("token\\t= abcdefgh1", "abcdefgh1"),
    ("secret\\f=abcdefgh1", "abcdefgh1"),
    ("passwd\\r=abcdefgh1", "abcdefgh1"),
    ("api_key\\u000b=abcdefgh1", "abcdefgh1"),                    # a vertical tab, a control escape
    ('secret\\": \\"abcdefgh1', "abcdefgh1"),                     # quotes inside the string
    ("https:\\/\\/hooks.slack.com\\/services\\/T0\\/B0\\/XX", "T0/B0"),   # slashes escaped
    ("eyJ" + "\\ud835\\udc00" * 8 + ".eyJ" + "\\ud835\\udc00" * 8 + "." + "\\ud835\\udc00" * 8,
     "\\ud835\\udc00" * 8),                                       # letters past U+FFFF, as pairs
])
def test_a_secret_only_its_escapes_hide_is_found(value, secret):
    """Each escape that keeps a pattern from matching the raw line: the line's strings are
    read decoded, and the secret goes."""
    import json

    line = '{"type":"user","message":{"content":"' + value + '"}}'
    assert json.loads(line)
    r, want_r = Redactor(), Redactor()
    out = redact_json_line(line, r)
    assert secret not in out and json.loads(secret.join('""')) not in json.loads(out)["message"]["content"]
    assert sum(r.counts.values()) == 1
    assert (out, r.counts) == (walk_always(line, want_r), want_r.counts)


# near misses of every kind: keywords with no value, values too short, prefixes with too few
# characters, written with escapes of quotes, newlines, colours and letters past ASCII
ORDINARY = ["tokenizer", "max_tokens: 4096", "monkey: 3", "password reset", "sk-learn", "task-list",
            "https://example.org/a/b", "authored by", "SG.", "eyJ", '"quoted"', "\n", "\t", "\u001b[31m",
            "caf\u00e9", "\u043e\u0448\u0438\u0431\u043a\u0430", "\U0001f680", "\\", "path\\to", " ", "x = 1;"]


def walked_lines(lines: list[str]) -> int:
    walked = []
    real_walk = redact._walk
    redact._walk = lambda value, r: (walked.append(1), real_walk(value, r))[1]
    try:
        for line in lines:
            redact_json_line(line, Redactor())
    finally:
        redact._walk = real_walk
    return len(walked)


def test_ordinary_lines_are_not_walked():
    import json

    rng = random.Random(5)
    lines = [json.dumps({"type": "assistant", "message": {"content": [
        {"type": "text", "text": ", ".join(rng.choice(ORDINARY) for _ in range(12))}],
        "usage": {"input_tokens": 3, "output_tokens": 9}}}, ensure_ascii=rng.random() < 0.5) for _ in range(500)]
    assert all(redact_json_line(line, Redactor()) == line for line in lines)
    assert walked_lines(lines) == 0


def _lines(n: int, seed: int) -> list[str]:
    """JSON lines with secrets in their values (some behind escapes), and a few lines that are
    not JSON, as a store's batch holds them."""
    import json

    rng = random.Random(seed)
    out = []
    for text in _texts(n, seed):
        if rng.random() < 0.05:
            out.append(text.replace("\n", " "))
        else:
            out.append(json.dumps({"type": "user", "message": {"content": text}}, ensure_ascii=rng.random() < 0.5))
    return out


def test_redacting_a_batch_on_processes_gives_each_line_and_count_as_in_thread(monkeypatch):
    """`ingest --redact` cuts a batch into chunks for a pool of processes: the lines come back
    in order, each as the redactor makes it in-thread, and the counts add up the same."""
    from convarch.etl import redact_pool

    lines = _lines(4000, 7)
    want_counts = Redactor()
    want = [redact_json_line(line, want_counts) for line in lines]
    monkeypatch.setattr(redact_pool, "IN_THREAD_BYTES", 0)
    monkeypatch.setattr(redact_pool, "CHUNK_BYTES", 20_000)       # many chunks, so order matters
    monkeypatch.setattr(redact_pool, "processes", lambda: 2)
    redact_pool.shutdown()
    try:
        got_counts = Redactor()
        got = redact_pool.redact_lines(lines, got_counts)
        pool = redact_pool._pool
        assert pool is not None and len(pool._processes) == 2      # the processes did the work
        assert got == want
        assert got_counts.counts == want_counts.counts and sum(want_counts.counts.values()) > 100
    finally:
        redact_pool.shutdown()


def test_a_pool_that_breaks_leaves_redaction_in_thread(monkeypatch):
    """Halfway through a batch: the batch is redacted again in-thread, its kinds counted once."""
    from concurrent.futures.process import BrokenProcessPool

    from convarch.etl import redact_pool

    class Broken:
        def map(self, fn, it):              # one chunk comes back, then a process dies
            yield fn(next(iter(it)))
            raise BrokenProcessPool("a process was killed")

        def shutdown(self, **kwargs):
            pass

    lines = _lines(300, 8)
    want_counts = Redactor()
    want = [redact_json_line(line, want_counts) for line in lines]
    monkeypatch.setattr(redact_pool, "IN_THREAD_BYTES", 0)
    monkeypatch.setattr(redact_pool, "_pool", Broken())
    monkeypatch.setattr(redact_pool, "_failed", False)
    got_counts = Redactor()
    assert redact_pool.redact_lines(lines, got_counts) == want
    assert got_counts.counts == want_counts.counts
    assert redact_pool._pool is None and redact_pool._failed       # not tried again this process


def test_a_script_without_a_main_guard_is_not_run_again_by_the_pool(tmp_path):
    """A process of the pool starts from a fresh interpreter, which would first run the
    parent's main script again: a user's script calling ingest with redaction and no
    `if __name__ == "__main__"` guard would have ingested twice, or failed."""
    import subprocess
    import sys

    script = tmp_path / "no_guard.py"
    script.write_text(
        "from convarch.etl.redact import Redactor\n"
        "from convarch.etl import redact_pool\n"
        "redact_pool.IN_THREAD_BYTES = 0\n"
        "redact_pool.processes = lambda: 2\n"
        "r = Redactor()\n"
        "out = redact_pool.redact_lines(['{\"a\": \"password=hunter2hunter2 %d\"}' % i for i in range(5000)], r)\n"
        "print('ran', len(out), r.counts['secret'], redact_pool._pool is not None and not redact_pool._failed)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["ran 5000 5000 True"], done.stdout
    assert "Traceback" not in done.stderr, done.stderr
