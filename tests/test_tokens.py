"""The ingest-side word cutter must cut exactly as the search_tokens macro's regex does, or a
query would look for words the index never made."""
import random

import duckdb
import pyarrow as pa
import pytest

from convarch.etl.tokens import words

TRICKY = [
    "plain words here",
    "  leading and trailing separators  ",
    "snake_case_name CamelCaseName __dunder__ x1 42 3.14 a-b a/b",
    "naïve café — über straße: non-ASCII letters split words",
    "emoji🙂between😀words, CJK 漢字テキスト and Ελληνικά",
    "tabs\tnew\nlines\r\ncarriage\x00nul\x7fdel",
    "",
    "...,;;!!",
    "ünïcödé_at_edges_é",
    "json {\"key\": [1, 2, {\"nested_value\": null}]}",
]


def regex_words(bodies: list[str | None]) -> list[tuple[int, str]]:
    con = duckdb.connect()
    con.register("docs", pa.table({"doc_id": pa.array(range(len(bodies)), pa.int64()), "body": pa.array(bodies, pa.string())}))
    rows = con.execute("select doc_id, regexp_extract_all(body, '[A-Za-z0-9_]+') from docs order by doc_id").fetchall()
    return [(doc_id, w) for doc_id, ws in rows for w in ws or []]


def cut(bodies, doc_ids=None, type_=pa.string()):
    ids = pa.array(doc_ids if doc_ids is not None else range(len(bodies)), pa.int64())
    t = words(ids, pa.array(bodies, type_))
    return list(zip(t["doc_id"].to_pylist(), t["word"].to_pylist()))


def test_same_words_as_the_query_macro_on_tricky_text():
    got = cut(TRICKY)
    assert got == regex_words(TRICKY)
    assert (2, "snake_case_name") in got and (3, "na") in got and (3, "ve") in got
    assert all(w for _, w in got)          # no empty words from leading separators


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_words_on_random_text(seed):
    rng = random.Random(seed)
    alphabet = "abcXYZ019_ -.,\n\t\"\\{}éß🙂漢\x00"
    bodies = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(300)]
    assert cut(bodies) == regex_words(bodies)


def test_nulls_slices_and_large_strings():
    bodies = [None, "one two", None, "three_3 four"]
    assert cut(bodies) == [(1, "one"), (1, "two"), (3, "three_3"), (3, "four")]
    assert cut(bodies, type_=pa.large_string()) == cut(bodies)
    sliced = pa.array(["skip me", "alpha beta", "gamma"], pa.string()).slice(1)
    t = words(pa.array([7, 8], pa.int64()), sliced)
    assert list(zip(t["doc_id"].to_pylist(), t["word"].to_pylist())) == [(7, "alpha"), (7, "beta"), (8, "gamma")]
    assert words(pa.array([], pa.int64()), pa.array([], pa.string())).num_rows == 0
