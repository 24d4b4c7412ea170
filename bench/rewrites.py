"""Stores rewritten in place: a JSON document or a SQLite database is read again whole
whenever it changes, and what it costs then depends on what changed in the lines it gives.

Five stores, each about `mb` megabytes: a Cline task whose API history (one JSON array)
grows by two messages, then has its last message rewritten and one more added; a goose
sessions.db that gets a row in a table convarch does not read (goose's own recipes, a WAL
checkpoint and the like change the files, not the lines); a Cursor state.vscdb whose latest
chat gains a bubble (its bubble and its chat's row written, as Cursor does), then its oldest
chat (which moves to the end of the lines, chats being given in the order they were last
updated); an OpenCode database whose latest session gains a message with its parts; and a
Gemini CLI op-log, which is appended to but replayed whole, whose next turn is a question and an
answer written twice (in progress, then complete, which supersedes the first line). Each
pick-up is timed against the same store read again whole in the same run, after a change to
its first line (which must load everything again, as every rewrite did before), and the
lake's growth is shown beside the size of its first load.
"""
from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

from stores import (cline_messages, cursor_bubble, cursor_store, gemini_log, gemini_turn, goose_db, goose_turn,
                    opencode_db, opencode_turn)

TASK = "1780000000000"


def _ingest(script: str, db: Path, source: str, root: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", script, str(db), f"{source}={root}"], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"ingest failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def lake_bytes(db: Path) -> int:
    """Bytes of the Parquet files the published catalog lists."""
    d = db.parent / f"{db.stem}.d"
    manifest = json.loads((d / "manifest.json").read_text())
    return sum((Path(f) if Path(f).is_absolute() else d / "lake" / f).stat().st_size
               for files in manifest["files"].values() for f in files)


def rewrites(script: str, work: Path, mb: int) -> dict:
    """Each store: first load, the cheap pick-ups, and the same store read again whole."""
    out = {}
    root = work / "cline"
    api = root / "tasks" / TASK / "api_conversation_history.json"
    api.parent.mkdir(parents=True)
    msgs = cline_messages(mb)
    api.write_text(json.dumps(msgs))
    db = work / "wh-cline" / "convarch.duckdb"
    first = _ingest(script, db, "cline", root)
    lake = lake_bytes(db)
    msgs += [{"role": "user", "content": [{"type": "text", "text": "one more: the lint warning"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "fixed"}]}]
    api.write_text(json.dumps(msgs))
    grown = _ingest(script, db, "cline", root)
    grown_lake = lake_bytes(db)
    msgs[-1]["content"][0]["text"] = "fixed, and the lint warning too"     # the last message rewritten
    msgs.append({"role": "user", "content": [{"type": "text", "text": "thanks"}]})
    api.write_text(json.dumps(msgs))
    tail = _ingest(script, db, "cline", root)
    tail_lake = lake_bytes(db)
    msgs[0]["content"][0]["text"] = "<task>\nfix the build, edited\n</task>"
    api.write_text(json.dumps(msgs))
    whole = _ingest(script, db, "cline", root)
    out["cline_grown"] = {"mb": round(api.stat().st_size / 1e6, 1), "messages": len(msgs),
                          "first_seconds": round(first["seconds"], 2), "first_lake_mb": round(lake / 1e6, 1),
                          "seconds": round(grown["seconds"], 2), "records": grown["records"],
                          "lake_growth_mb": round((grown_lake - lake) / 1e6, 2),
                          "tail_seconds": round(tail["seconds"], 2), "tail_records": tail["records"],
                          "tail_lake_growth_mb": round((tail_lake - grown_lake) / 1e6, 2),
                          "whole_seconds": round(whole["seconds"], 2), "whole_records": whole["records"],
                          "ratio_to_whole": round(grown["seconds"] / whole["seconds"], 3),
                          "tail_ratio_to_whole": round(tail["seconds"] / whole["seconds"], 3)}

    sessions = work / "goose" / "sessions"
    goose_db(sessions / "sessions.db", mb)
    db = work / "wh-goose" / "convarch.duckdb"
    first = _ingest(script, db, "goose", sessions.parent)
    lake = lake_bytes(db)
    con = sqlite3.connect(sessions / "sessions.db")
    con.execute("create table if not exists recipes (name text)")
    con.execute("insert into recipes values ('deploy')")
    con.commit()
    same = _ingest(script, db, "goose", sessions.parent)
    same_lake = lake_bytes(db)
    con.close()
    # an answer, its usage row and the session's totals: those load, not every usage row
    goose_turn(sessions / "sessions.db", 1)
    turn = _ingest(script, db, "goose", sessions.parent)
    turn_lake = lake_bytes(db)
    con = sqlite3.connect(sessions / "sessions.db")
    # its first line (the first message) changed: everything loads again
    con.execute("update messages set content_json = ? where id = (select min(id) from messages)",
                (json.dumps([{"type": "text", "text": "edited"}]),))
    con.commit()
    con.close()
    whole = _ingest(script, db, "goose", sessions.parent)
    out["goose_same_lines"] = {"mb": round((sessions / "sessions.db").stat().st_size / 1e6, 1),
                               "first_seconds": round(first["seconds"], 2), "first_lake_mb": round(lake / 1e6, 1),
                               "seconds": round(same["seconds"], 2), "records": same["records"],
                               "lake_growth_mb": round((same_lake - lake) / 1e6, 2),
                               "turn_seconds": round(turn["seconds"], 2), "turn_records": turn["records"],
                               "turn_lake_growth_mb": round((turn_lake - same_lake) / 1e6, 2),
                               "whole_seconds": round(whole["seconds"], 2), "whole_records": whole["records"],
                               "ratio_to_whole": round(same["seconds"] / whole["seconds"], 3),
                               "turn_ratio_to_whole": round(turn["seconds"] / whole["seconds"], 3)}

    store = work / "cursor" / "User" / "globalStorage" / "state.vscdb"
    cursor_store(store, mb)
    db = work / "wh-cursor" / "convarch.duckdb"
    first = _ingest(script, db, "cursor", store.parent.parent)
    lake = lake_bytes(db)
    con = sqlite3.connect(store)
    latest = con.execute("select key from cursorDiskKV where key like 'composerData:%' order by key desc limit 1").fetchone()[0]
    con.close()
    cursor_bubble(store, latest.split(":", 1)[1], "new1", "one more answer")
    chat = _ingest(script, db, "cursor", store.parent.parent)
    chat_lake = lake_bytes(db)
    cursor_bubble(store, "chat00000", "new2", "the oldest chat taken up again")   # it moves to the end
    taken_up = _ingest(script, db, "cursor", store.parent.parent)
    taken_up_lake = lake_bytes(db)
    # the first bubble of the store's first chat edited in place: everything loads again
    con = sqlite3.connect(store)
    con.execute("update cursorDiskKV set value = ? where key = 'bubbleId:chat00001:b0000'",
                (json.dumps({"type": 1, "text": "edited"}),))
    con.commit()
    con.close()
    whole = _ingest(script, db, "cursor", store.parent.parent)
    out["cursor_latest_chat"] = {"mb": round(store.stat().st_size / 1e6, 1),
                                 "first_seconds": round(first["seconds"], 2), "first_lake_mb": round(lake / 1e6, 1),
                                 "seconds": round(chat["seconds"], 2), "records": chat["records"],
                                 "lake_growth_mb": round((chat_lake - lake) / 1e6, 2),
                                 "taken_up_seconds": round(taken_up["seconds"], 2), "taken_up_records": taken_up["records"],
                                 "taken_up_lake_growth_mb": round((taken_up_lake - chat_lake) / 1e6, 2),
                                 "whole_seconds": round(whole["seconds"], 2), "whole_records": whole["records"],
                                 "ratio_to_whole": round(chat["seconds"] / whole["seconds"], 3),
                                 "taken_up_ratio_to_whole": round(taken_up["seconds"] / whole["seconds"], 3)}

    data = work / "opencode"
    data.mkdir()
    n = opencode_db(data / "opencode.db", mb)
    db = work / "wh-opencode" / "convarch.duckdb"
    first = _ingest(script, db, "opencode", data)
    lake = lake_bytes(db)
    opencode_turn(data / "opencode.db", n)
    turn = _ingest(script, db, "opencode", data)
    turn_lake = lake_bytes(db)
    # an old session renamed, as OpenCode writes it: its title and its update time
    con = sqlite3.connect(data / "opencode.db")
    con.execute("update session set title = 'renamed', time_updated = (select max(time_created) from message) + 1000 "
                "where id = 'ses_bench000001'")
    con.commit()
    con.close()
    renamed = _ingest(script, db, "opencode", data)
    renamed_lake = lake_bytes(db)
    # the first message's part rewritten in place: everything after it loads again
    con = sqlite3.connect(data / "opencode.db")
    con.execute("update part set data = ? where id = (select min(id) from part)",
                (json.dumps({"type": "text", "text": "edited"}),))
    con.commit()
    con.close()
    whole = _ingest(script, db, "opencode", data)
    out["opencode_turn"] = {"mb": round((data / "opencode.db").stat().st_size / 1e6, 1), "messages": n + 1,
                            "first_seconds": round(first["seconds"], 2), "first_lake_mb": round(lake / 1e6, 1),
                            "seconds": round(turn["seconds"], 2), "records": turn["records"],
                            "lake_growth_mb": round((turn_lake - lake) / 1e6, 2),
                            "renamed_seconds": round(renamed["seconds"], 2), "renamed_records": renamed["records"],
                            "renamed_lake_growth_mb": round((renamed_lake - turn_lake) / 1e6, 2),
                            "whole_seconds": round(whole["seconds"], 2), "whole_records": whole["records"],
                            "ratio_to_whole": round(turn["seconds"] / whole["seconds"], 3),
                            "renamed_ratio_to_whole": round(renamed["seconds"] / whole["seconds"], 3)}

    root = work / "gemini"
    log = root / "tmp" / "bench" / "chats" / "session-2026-05-01T10-00-5d1c2b3a.jsonl"
    gemini_log(log, mb)
    db = work / "wh-gemini" / "convarch.duckdb"
    first = _ingest(script, db, "gemini_cli", root)
    lake = lake_bytes(db)
    with open(log, "a") as fh:
        for r in gemini_turn(random.Random(9), 100_000, "and the zebrafish flag?"):
            fh.write(json.dumps(r) + "\n")
    turn = _ingest(script, db, "gemini_cli", root)
    turn_lake = lake_bytes(db)
    lines = log.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["summary"] = "bench session"
    log.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    whole = _ingest(script, db, "gemini_cli", root)
    out["gemini_turn"] = {"mb": round(log.stat().st_size / 1e6, 1), "lines": len(lines),
                          "first_seconds": round(first["seconds"], 2), "first_lake_mb": round(lake / 1e6, 1),
                          "seconds": round(turn["seconds"], 2), "records": turn["records"],
                          "lake_growth_mb": round((turn_lake - lake) / 1e6, 2),
                          "whole_seconds": round(whole["seconds"], 2), "whole_records": whole["records"],
                          "ratio_to_whole": round(turn["seconds"] / whole["seconds"], 3)}
    return out


def report(res: dict) -> str:
    c, g, u, m = res["cline_grown"], res["goose_same_lines"], res["cursor_latest_chat"], res["gemini_turn"]
    o = res["opencode_turn"]
    return "\n".join([
        "rewritten stores  a store read again after a change, against the same store read again whole in this run",
        f"  Cline history   {c['mb']} MB, {c['messages']} messages, 2 appended: {c['seconds']} s, {c['records']} records, "
        f"lake +{c['lake_growth_mb']} MB (first load {c['first_seconds']} s, {c['first_lake_mb']} MB); "
        f"read whole {c['whole_seconds']} s -> ratio {c['ratio_to_whole']}",
        f"  same history    its last message rewritten and 1 more: {c['tail_seconds']} s, {c['tail_records']} records, "
        f"lake +{c['tail_lake_growth_mb']} MB -> ratio {c['tail_ratio_to_whole']}",
        f"  goose database  {g['mb']} MB, a row in a table not read: {g['seconds']} s, {g['records']} records, "
        f"lake +{g['lake_growth_mb']} MB (first load {g['first_seconds']} s, {g['first_lake_mb']} MB); "
        f"read whole {g['whole_seconds']} s -> ratio {g['ratio_to_whole']}",
        f"  same database   an answer, its usage row and the session's totals: {g['turn_seconds']} s, "
        f"{g['turn_records']} records, lake +{g['turn_lake_growth_mb']} MB -> ratio {g['turn_ratio_to_whole']}",
        f"  Cursor store    {u['mb']} MB, a bubble in the latest chat: {u['seconds']} s, {u['records']} records, "
        f"lake +{u['lake_growth_mb']} MB (first load {u['first_seconds']} s, {u['first_lake_mb']} MB); "
        f"read whole {u['whole_seconds']} s -> ratio {u['ratio_to_whole']}",
        f"  same store      its oldest chat taken up again (it moves to the end): {u['taken_up_seconds']} s, "
        f"{u['taken_up_records']} records, lake +{u['taken_up_lake_growth_mb']} MB -> ratio {u['taken_up_ratio_to_whole']}",
        f"  OpenCode db     {o['mb']} MB, {o['messages']} messages, the latest session gains one: {o['seconds']} s, "
        f"{o['records']} records, lake +{o['lake_growth_mb']} MB (first load {o['first_seconds']} s, "
        f"{o['first_lake_mb']} MB); read whole {o['whole_seconds']} s -> ratio {o['ratio_to_whole']}",
        f"  same database   an old session renamed: {o['renamed_seconds']} s, {o['renamed_records']} records, "
        f"lake +{o['renamed_lake_growth_mb']} MB -> ratio {o['renamed_ratio_to_whole']}",
        f"  Gemini op-log   {m['mb']} MB, {m['lines']} lines, a turn appended (its answer written twice): "
        f"{m['seconds']} s, {m['records']} records, lake +{m['lake_growth_mb']} MB (first load {m['first_seconds']} s, "
        f"{m['first_lake_mb']} MB); read whole {m['whole_seconds']} s -> ratio {m['ratio_to_whole']}",
    ])


def main() -> None:
    """`python bench/rewrites.py [--mb N]`: this section of the bench alone."""
    from alone import run_alone

    run_alone("rewrites", "mb", 60, "size of each store", rewrites, report)


if __name__ == "__main__":
    main()
