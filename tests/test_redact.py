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
