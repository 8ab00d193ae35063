"""The structured strategy's SQL under hard limits, JSON-safe results, names SQL can use and
comment stripping that respects literals (issue 27, items 1, 2, 6, 7, 13)."""

from __future__ import annotations

import json
import re
import resource
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from longctx import answer
from longctx.graphs import STRATEGIES
from longctx.graphs.structured.query import result_text
from longctx.memory.records.database import (
    QueryTimeout,
    QueryTooLarge,
    build_database,
    result_cell,
    run_query,
)
from longctx.memory.records.normalize import ValueNotUnderstood, to_unit
from longctx.memory.records.schema import identifier, parse_schema
from longctx.memory.records.sql_guards import printf_widths
from longctx.memory.records.sql_text import QueryRefused, clean_sql
from longctx.memory.records.sql_words import FORBIDDEN, SQLITE_KEYWORDS, library_keywords
from longctx.memory.records.table import normalise_records, reduce_cells
from longctx.retrieval import Corpus
from longctx.retrieval.tokens import count_tokens
from tests.recording_server import RecordingServer, prompt_of
from tests.scripted_tools import ToolScriptedChatModel

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = {
    "entity": "company",
    "time": {"name": "fiscal_year", "type": "year"},
    "attributes": [
        {"name": "revenue", "type": "number", "unit": "USD million"},
        {"name": "sector", "type": "text", "static": True},
    ],
}
RECORDS = {
    "Acme 2023": [
        {
            "entity": "C1--x",
            "period": "FY2023",
            "values": {
                "revenue": {"value": "$1.2 billion", "quote": "revenue of $1.2 billion"},
                "sector": {"value": "Tech", "quote": "(Tech)"},
            },
        }
    ],
    "Birch 2023": [
        {
            "entity": "Birch /* Ltd */",
            "period": "2023",
            "values": {"revenue": {"value": "USD 800.5M", "quote": "revenue of USD 800.5M"}},
        }
    ],
}
DOCS = {
    "Acme 2023": "C1--x (Tech) reported revenue of $1.2 billion in FY2023.",
    "Birch 2023": "Birch /* Ltd */ had revenue of USD 800.5M in FY2023.",
}
#: ~1 MB of text (999,000 bytes: under the 1 MB value limit) made without printf widths or large
#: patterns: 999 'a' each replaced by 1,000 'b'.
MEGABYTE = "replace(printf('%.*c', 999, 'a'), 'a', printf('%.*c', 1000, 'b'))"
ROWS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT {n}) "


def database(**limits):
    schema = parse_schema(SCHEMA)
    cells, _ = normalise_records(
        schema, [(i, str(i), t, RECORDS[t]) for i, t in enumerate(RECORDS)]
    )
    return build_database(reduce_cells(schema, cells), **limits)


# -- 13. comments are stripped outside literals only -------------------------------------------
@pytest.mark.parametrize(
    "reply, sql",
    [
        ("SELECT * FROM facts WHERE company='C1--x'", "SELECT * FROM facts WHERE company='C1--x'"),
        (
            "```sql\nSELECT * FROM facts WHERE company = 'C1--x'; -- the company\n```",
            "SELECT * FROM facts WHERE company = 'C1--x'",
        ),
        ("SELECT '/* not a comment */' AS t", "SELECT '/* not a comment */' AS t"),
        ("SELECT 'it''s -- here' -- a comment", "SELECT 'it''s -- here'"),
        ('SELECT "odd--name" FROM facts', 'SELECT "odd--name" FROM facts'),
        ("SELECT [a--b], `c/*d` FROM t", "SELECT [a--b], `c/*d` FROM t"),
        ("-- the query\nSELECT 1 /* one */ + 1", "SELECT 1   + 1"),
        ("SELECT 1 /* an unclosed comment", "SELECT 1"),
        (
            "Here it is: WITH x AS (SELECT 1) SELECT * FROM x;",
            "WITH x AS (SELECT 1) SELECT * FROM x",
        ),
        ("SELECT 'select -- with' AS q", "SELECT 'select -- with' AS q"),
        ("The table 'select' is: SELECT 2", "SELECT 2"),
    ],
)
def test_clean_sql_strips_comments_outside_literals_only(reply, sql):
    assert clean_sql(reply) == sql


def test_a_literal_holding_comment_marks_reaches_the_engine_whole():
    conn = database()
    reply = (
        "```sql\nSELECT company FROM facts WHERE company = 'C1--x' OR company = 'Birch /* Ltd */' "
        "ORDER BY 1 -- both\n```"
    )
    assert run_query(conn, clean_sql(reply)).rows == [["Birch /* Ltd */"], ["C1--x"]]


# -- 7. names SQL can use -------------------------------------------------------------------------
def test_the_keyword_constant_is_the_sqlite_library_s_own_list():
    live = library_keywords()
    if live is None:
        pytest.skip("the SQLite library does not export sqlite3_keyword_name here")
    assert live == SQLITE_KEYWORDS and len(SQLITE_KEYWORDS) == 147


FILTERED = [
    "export",
    "import",
    "load",
    "copy",
    "edit",
    "http",
    "https_share",
    "read_count",
    "install",
    "s3",
    "pragma",
    "attach",
    "sqlar_x",
    "sqlite_master",
    "sqlite_stat1",
]


def test_every_keyword_and_filtered_word_becomes_a_usable_name():
    broken = {}
    for word in sorted(w.lower() for w in SQLITE_KEYWORDS) + FILTERED:
        name = identifier(word)
        schema = parse_schema(
            {"table": word, "entity": "company", "attributes": [{"name": word, "type": "number"}]}
        )
        assert schema.attributes[0].name == schema.table == name
        try:
            conn = build_database(
                reduce_cells(
                    schema,
                    normalise_records(
                        schema,
                        [
                            (
                                0,
                                "a",
                                "A",
                                [
                                    {
                                        "entity": "Acme",
                                        "period": None,
                                        "values": {name: {"value": "7", "quote": "7"}},
                                    }
                                ],
                            )
                        ],
                    )[0],
                )
            )
            rows = run_query(
                conn, f"SELECT company, {name} FROM {name} WHERE {name} IS NOT NULL ORDER BY {name}"
            ).rows
            assert rows == [["Acme", 7.0]], rows
        except Exception as exc:  # noqa: BLE001 - collect every failing word
            broken[word] = f"{name}: {type(exc).__name__}: {exc}"
    assert broken == {}
    assert identifier("transaction") == "transaction_" and identifier("Export") == "export_"
    assert identifier("http") == "c_http" and identifier("read_count") == "c_read_count"
    assert (
        identifier("revenue") == "revenue" and identifier("2024 sales") == "c_2024_sales"
    )  # ordinary names unchanged
    assert not FORBIDDEN.search(identifier("http")) and identifier("https share") == "c_https_share"
    assert identifier("sqlite_master") == "c_sqlite_master"


def test_a_config_schema_with_keyword_columns_is_renamed_when_the_config_is_made():
    keywords = (
        "transaction",
        "in",
        "is",
        "exists",
        "unique",
        "update",
        "set",
        "references",
        "export",
    )
    schema = {"entity": "company", "attributes": [{"name": n, "type": "number"} for n in keywords]}
    cfg = STRATEGIES.get("structured").make_config(schema=schema)
    names = [a.name for a in parse_schema(dict(cfg.schema)).attributes]
    assert names == [
        "transaction_",
        "in_",
        "is_",
        "exists_",
        "unique_",
        "update_",
        "set_",
        "references_",
        "export_",
    ]


def test_a_plan_naming_keyword_columns_answers(tmp_path):
    """The planner names columns ``transaction``, ``in``, ``set``, ``export``; the SQL writer
    reads the column names from the CREATE statement it is shown: the query runs."""
    planned = {
        "entity": "company",
        "attributes": [
            {"name": n, "type": "text" if n == "set" else "number"}
            for n in ("transaction", "in", "set", "export")
        ],
    }

    def reply(prompt, tools):
        if prompt.startswith("A question will be answered"):
            return [planned]
        if prompt.startswith("Extract rows"):
            return [
                {
                    "records": [
                        {
                            "entity": "Acme",
                            "period": None,
                            "values": {
                                "transaction_": {"value": "3", "quote": "3"},
                                "in_": {"value": "4", "quote": "4"},
                                "set_": {"value": "A", "quote": "A"},
                                "export_": {"value": "5", "quote": "5"},
                            },
                        }
                    ]
                }
            ]
        if prompt.startswith("Every document"):
            cols = re.findall(r"^  (\w+) \w+", prompt, re.M)
            return f"```sql\nSELECT {', '.join(cols)} FROM facts\n```"
        return "The answer is: " + re.search(r"<result>\n(.*?)\n</result>", prompt, re.S).group(1)

    a = answer(
        Corpus.from_texts(["Acme: 3 transactions, 4 in, set A, 5 exports."], titles=["Acme"]),
        "How many transactions?",
        strategy="structured",
        llm=ToolScriptedChatModel(reply_fn=reply),
        cache_dir=tmp_path,
    )
    q = next(s for s in a.steps if s["node"] == "query")
    assert q["ok"], q
    assert q["columns"] == ["company", "transaction_", "in_", "set_", "export_"] and q["rows"] == [
        ["Acme", 3.0, 4.0, "A", 5.0]
    ]


# -- 1. JSON-safe cells, capped at the source -----------------------------------------------------
@pytest.mark.parametrize(
    "value, cell",
    [
        (b"\x00\xff", "<blob 2 bytes: 00ff>"),
        (bytes(range(20)), "<blob 20 bytes: 000102030405060708090a0b0c0d0e0f...>"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (float("nan"), "NaN"),
        ("x" * 12, "xxxxxxxxxx... [cut: 12 characters]"),
        ("short", "short"),
        (1.5, 1.5),
        (2**62, 2**62),
        (None, None),
    ],
)
def test_result_cells_are_json_safe_and_bounded(value, cell):
    assert result_cell(value, max_chars=10) == cell


def test_a_result_with_a_blob_an_infinity_and_a_huge_string_is_json_safe():
    conn = database()
    r = run_query(
        conn,
        (
            f"SELECT company, CAST(company AS BLOB), 1e999, -1e999, {MEGABYTE} FROM facts ORDER BY "
            "company"
        ),
        max_cell_chars=50,
    )
    json.dumps(r.rows, allow_nan=False)  # no bytes, no Infinity
    assert r.rows[1][:4] == ["C1--x", "<blob 5 bytes: 43312d2d78>", "Infinity", "-Infinity"]
    assert r.rows[1][4] == "b" * 50 + "... [cut: 999,000 characters]" and r.cut_cells == 8


def test_a_structured_answer_over_such_a_result_is_json_safe(tmp_path):
    """A BLOB and 1e999 in the result, then a 100 MB string (refused: the model writes again):
    the answer, its steps and its evidence serialise as strict JSON."""
    sqls = [
        "SELECT company, CAST(company AS BLOB), 1e999 FROM facts",
        f"SELECT replace({MEGABYTE}, 'b', printf('%.*c', 100, 'c'))",
        "SELECT company, x'deadbeef' FROM facts",
    ]
    replies = iter(sqls[1:])
    first = [True]

    def reply(prompt, tools):
        if prompt.startswith("Extract rows"):
            return [{"records": RECORDS[re.search(r"^Document: (.+?)$", prompt, re.M).group(1)]}]
        if prompt.startswith("Every document"):
            if first[0]:
                first[0] = False
                return sqls[0]
            return next(replies)
        return "The answer is: " + re.search(r"<result>\n(.*?)\n</result>", prompt, re.S).group(
            1
        ).replace("\n", "; ")

    corpus = Corpus.from_texts(list(DOCS.values()), titles=list(DOCS))
    llm = ToolScriptedChatModel(reply_fn=reply)
    a = answer(
        corpus, "Revenue?", strategy="structured", llm=llm, cache_dir=tmp_path, schema=SCHEMA
    )
    text = json.dumps(a.to_dict(), allow_nan=False)
    assert "<blob 5 bytes" in text and "Infinity" in text and a.evidence
    b = answer(
        corpus, "Revenue again?", strategy="structured", llm=llm, cache_dir=tmp_path, schema=SCHEMA
    )
    q = next(s for s in b.steps if s["node"] == "query")
    assert "QueryTooLarge" in q["attempts"][0]["error"] and "too big" in q["attempts"][0]["error"]
    assert q["ok"] and q["rows"][0][1] == "<blob 4 bytes: deadbeef>"
    json.dumps(b.to_dict(), allow_nan=False)


def test_a_number_too_large_for_a_double_is_unreadable_not_infinity():
    with pytest.raises(ValueNotUnderstood, match="finite"):
        to_unit("9" * 400, "USD")
    schema = parse_schema(SCHEMA)
    cells, stats = normalise_records(
        schema,
        [
            (
                0,
                "a",
                "A",
                [
                    {
                        "entity": "X",
                        "period": "2023",
                        "values": {"revenue": {"value": "9" * 400, "quote": "q"}},
                    }
                ],
            )
        ],
    )
    assert cells == [] and "finite" in stats["unreadable"][0]["error"]


# -- 2. hard limits --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fmt, args, widths",
    [
        ("%.*c", (9e8, "x"), [900000000]),
        ("%5.2f|%-10s|%%|%d", (1.0, "a", 3), [5, 2, 10]),
        ("%*d and %.*s", (-20, 5, 7, "abc"), [20, 7]),
        ("%.*c", ("9e8 wide", "x"), [900000000]),  # SQLite reads the number a text starts with
        ("%.*c", (b"900000000", "x"), [900000000]),  # and a blob's text
        ("%.*c", (float("inf"), "x"), [2**63]),
        ("%0005d|%,d", (1, 2), [5]),
        ("no specs", (), []),
        (None, (), []),
    ],
)
def test_printf_widths(fmt, args, widths):
    assert printf_widths(fmt, args) == widths


def test_printf_of_900_million_characters_stops_within_twice_the_limit_and_under_1_gb():
    """Issue 27's headline attack in this process: the old code ran 14-39 s and grew the peak
    RSS by 2.5-5.2 GB (a peak past this process's own). The width guard refuses it by its message
    (the 2 s timeout would say otherwise), and the peak RSS shows no 900 MB string was built."""
    conn = database()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(
        QueryTooLarge, match=r"printf\(\) width or precision 900,000,000 is over the limit of 1,000"
    ):
        run_query(conn, "SELECT printf('%.*c', 9e8, 'x')", timeout_s=2.0)
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 1024


def test_each_attack_stops_at_its_own_limit():
    conn = database(max_value_bytes=1_000_000)
    with pytest.raises(
        QueryTooLarge, match=r"printf\(\) width or precision 900,000,000 is over the limit of 1,000"
    ):
        run_query(conn, "SELECT printf('%.*c', 9e8, 'x')")
    with pytest.raises(QueryTooLarge, match="format"):
        run_query(conn, "SELECT format('%2000000000d', 1)")
    for maker in ("randomblob(9e8)", "zeroblob(9e8)", "hex(RandomBlob (4))"):
        with pytest.raises(QueryRefused, match="not allowed"):
            run_query(conn, f"SELECT {maker}")
    # 200 rows of 20 MB: the value limit stops the first one
    with pytest.raises(QueryTooLarge, match="longer than 1,000,000 bytes"):
        run_query(
            conn,
            ROWS.format(n=200)
            + f"SELECT i, replace({MEGABYTE}, 'b', printf('%.*c', 20, 'c')) FROM n",
        )
    # 200 rows of 1 MB (under the value limit): the result-bytes limit keeps a few, each cell cut
    r = run_query(
        conn,
        ROWS.format(n=200) + f"SELECT i, {MEGABYTE} FROM n",
        max_result_bytes=20_000,
        max_cell_chars=1_000,
    )
    assert (
        r.truncated
        and 10 <= len(r.rows) < 20
        and r.nbytes <= 20_000
        and all(len(row[1]) < 1_100 for row in r.rows)
    )
    # a chain of replace over 1 MB with a long pattern: refused before it compares anything
    with pytest.raises(QueryTooLarge, match=r"replace\(\) over 999,000 and 10,000 bytes"):
        run_query(
            conn,
            (
                f"SELECT length(replace({MEGABYTE}, replace(printf('%.*c', 100, 'b'), 'b', "
                "printf('%.*c', 100, 'b')), 'x'))"
            ),
        )
    with pytest.raises(QueryTooLarge, match=r"trim\(\)"):
        run_query(conn, f"SELECT trim({MEGABYTE}, printf('%.*c', 100, 'z') || 'b')")
    # LIKE/GLOB with a 1,000-byte pattern over 1 MB (3.7 s in one call unguarded)
    for op, wild in (("LIKE", "%"), ("GLOB", "*")):
        with pytest.raises(QueryTooLarge, match=rf"{op.lower()}\(\) over"):
            run_query(
                conn,
                (
                    f"SELECT {MEGABYTE} {op} '{wild}' || replace(printf('%.*c', 990, 'x'), 'x', "
                    "'b') || 'c'"
                ),
            )
    # the max_rows limit
    r = run_query(conn, ROWS.format(n=500) + "SELECT i FROM n", max_rows=7)
    assert r.truncated and [row[0] for row in r.rows] == list(range(1, 8))
    # the connection still answers ordinary queries, through the guarded functions too
    ok = run_query(
        conn,
        (
            "SELECT printf('%.1f', revenue), replace(company, '-', '_'), instr(company, 'x'), "
            "trim('  a '), rtrim('a..', '.'), company GLOB 'C*', company LIKE 'c1!-%' ESCAPE '!' "
            "FROM facts WHERE company LIKE 'c1%'"
        ),
    )
    assert ok.rows == [["1200.0", "C1__x", 5, "a", "a", 1, 1]] and not ok.truncated
    with pytest.raises(
        sqlite3.OperationalError, match="ESCAPE expression must be a single character"
    ):  # SQLite's own error, as it words it
        run_query(conn, "SELECT company LIKE 'x' ESCAPE 'ab' FROM facts")


def test_a_long_query_is_stopped_by_the_watchdog_within_twice_the_limit():
    conn = database()
    endless = ROWS.format(n=10**12) + f"SELECT max(length(replace({MEGABYTE}, 'b', 'c'))) FROM n"
    with pytest.raises(QueryTimeout, match="longer than 0.3 s"):
        run_query(conn, endless, timeout_s=0.3)
    assert run_query(conn, "SELECT count(*) FROM facts").rows == [
        [2]
    ]  # the interrupt does not outlive its query


ATTACKS = r"""
import json, resource, sys, time
from longctx.memory.records.database import build_database, run_query
from longctx.memory.records.schema import parse_schema
from longctx.memory.records.table import normalise_records, reduce_cells

schema = parse_schema({"entity": "company", "attributes": [{"name": "revenue", "type": "number"}]})
records = [(0, "a", "A", [{"entity": "Acme", "values": {"revenue": {"value": "1", "quote": "1"}}}])]
conn = build_database(reduce_cells(schema, normalise_records(schema, records)[0]))
LIMIT = 1.0
MB = "replace(printf('%.*c', 999, 'a'), 'a', printf('%.*c', 1000, 'b'))"
ROWS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT {n}) "
attacks = {
    "printf": "SELECT printf('%.*c', 9e8, 'x')",
    "printf_max": "SELECT printf('%.*c', 2147483647, 'x'), printf('%.*c', 2147483647, 'y')",
    "randomblob": "SELECT randomblob(9e8)",
    "rows_of_20mb": ROWS.format(n=200)
    + f"SELECT i, replace({MB}, 'b', printf('%.*c', 20, 'c')) FROM n",
    "replace_chain": "SELECT "
    + "replace(" * 20
    + "printf('%.*c', 1000, 'b')"
    + ", 'b', 'bb')" * 20,
    "sort_of_1mb_values": ROWS.format(n=2000)
    + f"SELECT i, replace({MB}, 'b', 'c') || i AS v FROM n ORDER BY v DESC",
    "endless": ROWS.format(n=10**12) + f"SELECT max(length(replace({MB}, 'b', 'c'))) FROM n",
    "like_1kb_pattern_over_1mb": f"SELECT {MB} LIKE '%' || "
    "replace(printf('%.*c', 990, 'x'), 'x', 'b') || 'c'",
}
out = {}
for name, sql in attacks.items():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    try:
        run_query(conn, sql, timeout_s=LIMIT)
        error = None
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    seconds = time.perf_counter() - started
    out[name] = {"seconds": seconds, "rss_growth_mb": growth_mb, "error": error}
print(json.dumps(out))
"""


@pytest.mark.slow  # a fresh interpreter importing the graphs: ~6 s on 2 loaded cores
def test_every_attack_of_issue_27_stops_with_its_own_error_and_under_1_gb():
    """In a fresh process (its peak RSS is read with getrusage): each attack ends with its own
    error (its guard's, not the 1 s watchdog's: only the endless query times out) and grows the
    peak RSS by under 1 GB (the printf attack, measured first, by under 50 MB); the old code took
    39 s and 5.2 GB on printf alone."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(ATTACKS)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    expected = {
        "printf": "QueryTooLarge: printf",
        "printf_max": "QueryTooLarge: printf",
        "randomblob": "QueryRefused",
        "rows_of_20mb": "QueryTooLarge: a value longer than",
        "replace_chain": "QueryTooLarge: a value longer than",
        "sort_of_1mb_values": "QueryTooLarge: the query needed more memory",
        "endless": "QueryTimeout",
        "like_1kb_pattern_over_1mb": "QueryTooLarge: like() over",
    }
    for name, prefix in expected.items():
        got = out[name]
        assert (got["error"] or "").startswith(prefix), (name, got)
        assert got["rss_growth_mb"] < 1024, (name, got)
    assert out["printf"]["rss_growth_mb"] < 50


# -- the final prompt's size -----------------------------------------------------------------------
def test_result_text_is_cut_with_a_visible_marker():
    rows = [[i, "word " * 50] for i in range(100)]
    text, shown = result_text(rows, 500)
    assert 0 < shown < 100 and count_tokens(text) <= 540
    assert (
        text.splitlines()[-1]
        == f"... [{100 - shown} of 100 rows not shown: the result shown is limited to 500 tokens]"
    )
    text, shown = result_text([["word " * 2000]], 100)
    assert (
        shown == 0
        and text.endswith("rows not shown: the result shown is limited to 100 tokens]")
        and "[row cut]" in text
    )
    assert count_tokens(text) < 160
    assert result_text([], 10) == ("(no rows)", 0) and result_text([[1], [2]], 100) == (
        "[1]\n[2]",
        2,
    )


def test_the_final_prompt_holds_at_most_the_result_budget(tmp_path):
    seen = []

    def reply(prompt, tools):
        if prompt.startswith("Extract rows"):
            return [{"records": RECORDS[re.search(r"^Document: (.+?)$", prompt, re.M).group(1)]}]
        if prompt.startswith("Every document"):
            return ROWS.format(n=1000) + "SELECT i, printf('%.*c', 900, 'w') FROM n"
        seen.append(prompt)
        return "done"

    corpus = Corpus.from_texts(list(DOCS.values()), titles=list(DOCS))
    a = answer(
        corpus,
        "List?",
        strategy="structured",
        llm=ToolScriptedChatModel(reply_fn=reply),
        cache_dir=tmp_path,
        schema=SCHEMA,
        answer_result_tokens=800,
    )
    q = next(s for s in a.steps if s["node"] == "query")
    assert q["truncated"] and q["result_bytes"] <= 65_536
    result = re.search(r"<result>\n(.*?)\n</result>", seen[0], re.S).group(1)
    assert (
        count_tokens(result) <= 850
        and "rows not shown: the result shown is limited to 800 tokens]" in result
    )
    assert "rows, cut)" in seen[0]
    assert (
        next(s for s in a.steps if s["node"] == "format_answer")["result_rows_shown"] < q["n_rows"]
    )


# -- 6. `longctx answer --strategy structured` prints evidence without a score ---------------------
def test_cli_answer_with_the_structured_strategy_prints_its_evidence(tmp_path, monkeypatch, capsys):
    from longctx.experiments.cli.app import main

    folder = tmp_path / "docs"
    folder.mkdir()
    for title, text in DOCS.items():
        (folder / f"{title}.txt").write_text(text)

    def reply(request):
        prompt = prompt_of(request)
        if prompt.startswith("Extract rows"):
            return json.dumps(
                {"records": RECORDS[re.search(r"^Document: (.+?)$", prompt, re.M).group(1)]}
            )
        if prompt.startswith("Every document"):
            return "```sql\nSELECT company, revenue FROM facts WHERE revenue > 1000\n```"
        return "1200"

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with RecordingServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        code = main(
            [
                "answer",
                "--corpus",
                str(folder),
                "--question",
                "Revenue of C1--x?",
                "--strategy",
                "structured",
                "--llm",
                "openai:rec",
                "--cache-dir",
                str(tmp_path / "cache"),
                "--option",
                f"schema={json.dumps(SCHEMA)}",
            ]
        )
    captured = capsys.readouterr()
    assert code == 0, captured.err[-2000:]
    out = captured.out
    assert "Answer: 1200" in out and "Usage: " in out
    evidence = out.split("Evidence:")[1].split("Usage:")[0]
    assert (
        "[1] Acme 2023: C1--x | 2023 | revenue = 1200.0 USD million" in evidence
        and "score" not in evidence
    )


# -- 1. a run over such SQL writes every row, and its rerun completes ------------------------------
def test_a_run_whose_sql_returns_a_blob_an_infinity_and_a_huge_string_writes_every_row(
    tmp_path, monkeypatch
):
    from longctx.experiments.benchmarks import Sample
    from longctx.experiments.runner import RunConfig, read_rows, run_experiment
    from longctx.retrieval.contract import Question

    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    sql = {
        "Blob?": "SELECT company, randomblob(4) FROM facts",
        "Blob again?": "SELECT company, CAST(company AS BLOB) FROM facts",
        "Infinity?": "SELECT 1e999, -1e999",
        "Huge?": f"SELECT replace({MEGABYTE}, 'b', printf('%.*c', 100, 'c'))",
        "Long?": f"SELECT {MEGABYTE}",
    }

    def reply(prompt, tools):
        if prompt.startswith("Extract rows"):
            return [{"records": RECORDS[re.search(r"^Document: (.+?)$", prompt, re.M).group(1)]}]
        question = re.search(r"^Question: (.+?)$", prompt, re.M).group(1)
        if prompt.startswith("Every document"):
            return f"```sql\n{sql[question]}\n```"
        return (
            "Answer: "
            + (
                re.search(r"<result>\n(.*?)\n</result>", prompt, re.S)
                or re.search(r"(.*)", "no result")
            ).group(1)[:100]
        )

    corpus = Corpus.from_texts(list(DOCS.values()), titles=list(DOCS))
    samples = [
        Sample(
            sample_id=f"s{i}",
            benchmark="synth",
            dataset="d",
            corpus=corpus,
            question=Question(text=q),
            answers=("x",),
        )
        for i, q in enumerate(sql)
    ]
    cfg = RunConfig(
        benchmark="synth",
        strategies=("structured",),
        llm="scripted",
        strategy_options={"structured": {"schema": SCHEMA}},
    )
    out = tmp_path / "run"
    for _ in range(2):  # the rerun replays nothing that fails and completes too
        run_experiment(
            cfg,
            out,
            llm=ToolScriptedChatModel(reply_fn=reply),
            samples=samples,
            show_progress=False,
        )
        rows = read_rows(out)
        assert sorted(r["sample_id"] for r in rows) == [f"s{i}" for i in range(len(sql))]
        assert all(r["status"] == "ok" for r in rows), [r.get("error") for r in rows]
    text = (out / "results.jsonl").read_text()
    for line in text.splitlines():
        json.loads(
            line, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c} in results.jsonl")
        )
    by_id = {r["sample_id"]: {s["node"]: s for s in r["steps"]} for r in rows}
    assert (
        "randomblob" in by_id["s0"]["query"]["attempts"][0]["error"]
        and not by_id["s0"]["query"]["ok"]
    )
    assert by_id["s1"]["query"]["rows"][0][1].startswith("<blob ")
    assert by_id["s2"]["query"]["rows"] == [["Infinity", "-Infinity"]]
    assert "too big" in by_id["s3"]["query"]["attempts"][0]["error"]
    assert (
        by_id["s4"]["query"]["rows"][0][0].endswith("... [cut: 999,000 characters]")
        and len(text) < 200_000
    )
