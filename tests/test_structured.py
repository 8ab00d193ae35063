"""The structured strategy: scripted true-record extraction gives the SQL truth on every
synthetic query template; malformed extractions, SQL errors and unsafe SQL; the record cache."""

from __future__ import annotations

import json
import pickle
import re
import sqlite3
import threading
import zlib
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

from longctx import answer, answer_many
from longctx.experiments.synth import SynthConfig, generate, load_samples, parse_tokens
from longctx.experiments.synth.domains import get_domain
from longctx.experiments.synth.queries import MAKERS
from longctx.experiments.synth.values import format_answer, written_forms
from longctx.graphs import STRATEGIES, ConfigError
from longctx.graphs.structured.graph import extract_tasks, group_size, route_extract
from longctx.memory.records.cache import RecordCache
from longctx.memory.records.database import build_database, run_query
from longctx.memory.records.normalize import normalize_period, to_unit
from longctx.memory.records.schema import TableSchema, parse_schema
from longctx.memory.records.sql_text import QueryRefused, check_sql
from longctx.memory.records.table import normalise_records, reduce_cells
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question
from tests.scripted_tools import ToolScriptedChatModel, malformed_tool_call

UNITS = {
    "usd_m": ("number", "USD million"),
    "count": ("number", "count"),
    "percent": ("percent", "%"),
    "usd2": ("number", "USD"),
    "usd_int": ("number", "USD"),
}


def domain_schema(domain_name: str) -> dict:
    """The table a perfect planner would define for a synthetic domain (the
    generator's ``facts``)."""
    domain = get_domain(domain_name)
    attrs = [
        {
            "name": f.name,
            "type": UNITS[f.kind][0],
            "unit": UNITS[f.kind][1],
            "description": f.label,
            "static": False,
        }
        for f in domain.fields
    ]
    attrs += [
        {"name": c.name, "type": "text", "unit": "", "description": c.label, "static": True}
        for c in domain.categoricals
    ]
    return {
        "table": "facts",
        "entity": "entity",
        "entity_description": domain.singular,
        "time": {"name": "fiscal_year", "type": "year", "description": "fiscal year"},
        "attributes": attrs,
    }


class TruthModel:
    """A scripted model: the domain's schema, each document's true records (values in varied
    written forms, from the ``statements`` table), the generator's SQL, and its answer format."""

    def __init__(self, root: Path):
        conn = sqlite3.connect(root / "facts.sqlite")
        self.kinds = {
            f.name: f.kind for d in ("finance", "education") for f in get_domain(d).fields
        }
        self.records: dict[str, list[dict]] = {}
        rows: dict[tuple[str, str, int], dict] = {}
        for doc_id, entity, fy, field, value, text in conn.execute("SELECT * FROM statements"):
            rec = rows.setdefault(
                (doc_id, entity, fy),
                {"entity": entity, "period": f"FY{fy}" if fy else None, "values": {}},
            )
            if text is not None:
                shown = text
            else:
                forms = written_forms(value, self.kinds[field])
                shown = forms[zlib.crc32(f"{doc_id}{field}{fy}".encode()) % len(forms)]
            rec["values"][field] = {"value": shown, "quote": f"{field}: {shown}"}
        for (doc_id, _, _), rec in rows.items():
            self.records.setdefault(doc_id, []).append(rec)
        conn.close()
        self.questions = {
            json.loads(line)["question"]: json.loads(line)
            for line in (root / "questions.jsonl").read_text().splitlines()
            if line.strip()
        }
        self.domain = next(iter(self.questions.values()))["domain"]
        self.extractions = 0
        self.lock = threading.Lock()

    def __call__(self, prompt: str, tools):
        if prompt.startswith("A question will be answered"):
            return [domain_schema(self.domain)]
        if prompt.startswith("Extract rows"):
            with self.lock:
                self.extractions += 1
            title = re.search(r"^Document: (.+?)$", prompt, re.M).group(1)
            return [{"records": self.records.get(title + ".md", [])}]
        question = re.search(r"^Question: (.+?)$", prompt, re.M).group(1)
        rec = self.questions[question]
        if prompt.startswith("Every document"):
            return f"```sql\n{rec['sql']}\n```"
        rows = [
            json.loads(line)
            for line in re.search(r"<result>\n(.*?)\n</result>", prompt, re.S).group(1).splitlines()
            if line != "(no rows)"
        ]
        value = [r[0] for r in rows] if rec["answer_type"] == "list" else rows[0][0]
        return f"The answer is: {format_answer(value, rec['answer_type'])}"


@pytest.fixture(scope="module")
def synth_128k(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "fin-128k"
    generate(
        SynthConfig(domain="finance", target_tokens=parse_tokens("128K"), seed=0, num_questions=40),
        out,
    )
    return out


def run_truth(root: Path, cache: Path):
    samples = load_samples(root)
    model = TruthModel(root)
    llm = ToolScriptedChatModel(reply_fn=model)
    answers = answer_many(
        samples[0].corpus,
        [s.question for s in samples],
        strategy="structured",
        llm=llm,
        cache_dir=cache,
        concurrency=1,
    )
    return samples, answers, model


def check_truth(samples, answers, model):
    kinds = {s.metadata["kind"] for s in samples}
    wrong = [
        (s.metadata["kind"], a.answer, s.answer)
        for s, a in zip(samples, answers)
        if a.answer != f"The answer is: {s.answer}"
    ]
    assert not wrong, wrong
    # the corpus was read once: the first question extracted every document, the others none
    maps = [next(st for st in a.steps if st["node"] == "map") for a in answers]
    n_docs = len(samples[0].corpus)
    assert maps[0]["to_extract"] == n_docs and all(
        m["cached"] == n_docs and m["to_extract"] == 0 for m in maps[1:]
    )
    assert model.extractions == n_docs
    assert all(a.usage.llm_calls == 3 for a in answers[1:])  # plan, SQL, answer
    return kinds


def test_true_records_give_the_sql_truth_on_every_template_128k(synth_128k, tmp_path):
    samples, answers, model = run_truth(synth_128k, tmp_path / "cache")
    kinds = check_truth(samples, answers, model)
    every = {m.__name__ for makers in MAKERS.values() for m in makers}
    # the 40 drawn questions cover the templates; the education domain covers the rest below
    assert len(kinds) >= 10, kinds
    reduce = next(st for st in answers[0].steps if st["node"] == "reduce")
    assert reduce["conflicting_restatements"] > 0 and reduce["unreadable_count"] == 0
    assert kinds <= every
    first = answers[0]
    assert first.evidence and all(
        e.doc_id.endswith(".md") and '"' in e.text for e in first.evidence
    )


def test_every_query_template_on_both_domains(tmp_path):
    seen = set()
    for domain in ("finance", "education"):
        out = tmp_path / domain
        generate(
            SynthConfig(
                domain=domain, target_tokens=parse_tokens("128K"), seed=1, num_questions=60
            ),
            out,
        )
        samples, answers, model = run_truth(out, tmp_path / f"cache-{domain}")
        seen |= check_truth(samples, answers, model)
    every = {m.__name__ for makers in MAKERS.values() for m in makers}
    assert seen == every, every - seen


@pytest.mark.slow
def test_true_records_give_the_sql_truth_at_1m(tmp_path):
    out = tmp_path / "fin-1m"
    generate(SynthConfig(domain="finance", target_tokens=parse_tokens("1M"), seed=0), out)
    samples, answers, model = run_truth(out, tmp_path / "cache")
    check_truth(samples, answers, model)


# -- degradation, repair, refusal -------------------------------------------------------
SCHEMA = {
    "entity": "company",
    "time": {"name": "fiscal_year", "type": "year"},
    "attributes": [
        {"name": "revenue", "type": "number", "unit": "USD million"},
        {"name": "sector", "type": "text", "static": True},
    ],
}
DOCS = {
    "Acme 2023": "Acme Corp (Technology) reported revenue of $1.2 billion in FY2023.",
    "Birch 2023": "Birch Ltd (Retail) had revenue of USD 800.5M in FY2023.",
    "Acme 2024": "Acme Corp restated FY2023 revenue to 1,250 USD million.",
}


def _row(entity: str, period: str, **values: tuple[str, str]) -> dict:
    """One extracted row: each value with the quote it was read from."""
    return {
        "entity": entity,
        "period": period,
        "values": {k: {"value": v, "quote": q} for k, (v, q) in values.items()},
    }


TRUE = {
    "Acme 2023": [
        _row(
            "Acme Corp",
            "FY2023",
            revenue=("$1.2 billion", "revenue of $1.2 billion"),
            sector=("Technology", "Acme Corp (Technology)"),
        )
    ],
    "Birch 2023": [
        _row(
            "Birch Ltd",
            "2023",
            revenue=("USD 800.5M", "revenue of USD 800.5M"),
            sector=("Retail", "Birch Ltd (Retail)"),
        )
    ],
    "Acme 2024": [
        _row(
            "ACME CORP",
            "FY2023",
            revenue=("1,250 USD million", "restated FY2023 revenue to 1,250 USD million"),
        )
    ],
}


def small_corpus() -> Corpus:
    return Corpus.from_texts(list(DOCS.values()), titles=list(DOCS))


def recording_extractions(
    extracted: list[str],
    sql: str = "SELECT company, fiscal_year, revenue FROM facts ORDER BY company",
):
    """A :func:`scripted` model answering ``sql`` that appends the title of every document it is
    asked to extract to ``extracted``."""
    llm = scripted([sql])
    inner = llm.reply_fn

    def reply(prompt, tools):
        if prompt.startswith("Extract rows"):
            extracted.append(re.search(r"^Document: (.+?)$", prompt, re.M).group(1))
        return inner(prompt, tools)

    llm.reply_fn = reply
    return llm


def scripted(
    sqls: list[str], *, bad_docs: dict[str, int] | None = None, always_bad: set[str] = frozenset()
):
    """Extraction replies from TRUE (``bad_docs[title]`` malformed replies first), SQL replies
    in order."""
    bad = dict(bad_docs or {})
    sql_replies = list(sqls)

    def reply(prompt: str, tools):
        if prompt.startswith("Extract rows"):
            title = re.search(r"^Document: (.+?)$", prompt, re.M).group(1)
            if title in always_bad:
                return malformed_tool_call()
            if bad.get(title, 0) > 0:
                bad[title] -= 1
                return [
                    {
                        "records": [
                            {
                                "entity": "X",
                                "period": "FY2023",
                                "values": {"revenue": {"value": "a lot", "quote": "x"}},
                            }
                        ]
                    }
                ]
            return [{"records": TRUE[title]}]
        if prompt.startswith("Every document"):
            return f"```sql\n{sql_replies.pop(0)}\n```"
        return (
            "The answer is: "
            + re.search(r"<result>\n(.*?)\n</result>", prompt, re.S).group(1).replace("\n", "; ")
            if "<result>" in prompt
            else "no answer"
        )

    return ToolScriptedChatModel(reply_fn=reply)


def test_reduce_normalises_and_latest_document_wins(tmp_path):
    llm = scripted(["SELECT company, fiscal_year, revenue, sector FROM facts ORDER BY company"])
    a = answer(
        small_corpus(),
        "What was the revenue of each company?",
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
    )
    q = next(s for s in a.steps if s["node"] == "query")
    assert q["rows"] == [
        ["ACME CORP", 2023, 1250.0, "Technology"],
        ["Birch Ltd", 2023, 800.5, "Retail"],
    ]
    red = next(s for s in a.steps if s["node"] == "reduce")
    assert red["superseded"] == 1 and red["conflicting_restatements"] == 1 and red["rows"] == 2
    revenue = {e.title for e in a.evidence if "| revenue =" in e.text}
    assert revenue == {
        "Acme 2024",
        "Birch 2023",
    }  # the restatement is the evidence, not the first report
    assert any("1,250 USD million" in e.text for e in a.evidence) and len(a.evidence) == 4
    plan = next(s for s in a.steps if s["node"] == "plan")
    assert plan["source"] == "config" and plan["schema"]["entity"] == "company"


def test_first_document_rule(tmp_path):
    llm = scripted(["SELECT revenue FROM facts WHERE company LIKE 'acme%'"])
    a = answer(
        small_corpus(),
        "Acme revenue?",
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
        conflict_rule="first_document",
    )
    assert next(s for s in a.steps if s["node"] == "query")["rows"] == [[1200.0]]


def test_malformed_extraction_is_retried_then_recorded(tmp_path):
    llm = scripted(
        ["SELECT COUNT(*) FROM facts"], bad_docs={"Acme 2023": 1}, always_bad={"Birch 2023"}
    )
    a = answer(
        small_corpus(),
        "How many companies?",
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
        retries=2,
    )
    degraded = [s for s in a.steps if s["node"] == "extract"]
    assert len(degraded) == 1 and degraded[0]["title"] == "Birch 2023" and degraded[0]["calls"] == 3
    assert "not valid JSON" in degraded[0]["errors"][0]
    red = next(s for s in a.steps if s["node"] == "reduce")
    assert red["extraction"]["calls"] == 2 + 3 + 1 and red["extraction"]["degraded_documents"] == [
        "1"
    ]
    retried = [
        c
        for c in llm.calls
        if c["prompt"].startswith("Extract rows") and "Acme 2023" in c["prompt"]
    ]
    assert (
        len(retried) == 2
        and "could not be used" in retried[1]["prompt"]
        and "a lot" in retried[1]["prompt"]
    )
    # the degraded document is cached as such: the next question reads nothing again and says so
    llm2 = scripted(["SELECT COUNT(*) FROM facts"])
    b = answer(
        small_corpus(),
        "How many companies?",
        strategy="structured",
        llm=llm2,
        cache_dir=tmp_path,
        schema=SCHEMA,
    )
    mapped = next(s for s in b.steps if s["node"] == "map")
    assert (
        mapped["to_extract"] == 0
        and "1 document(s) read degraded" in mapped["degraded"]
        and "retry_degraded" in mapped["degraded"]
    )
    assert not [c for c in llm2.calls if c["prompt"].startswith("Extract rows")]
    assert next(s for s in b.steps if s["node"] == "query")["rows"] == [[1]]
    # unless asked: retry_degraded reads that document again, the others not
    llm3 = scripted(["SELECT COUNT(*) FROM facts"])
    c = answer(
        small_corpus(),
        "How many companies?",
        strategy="structured",
        llm=llm3,
        cache_dir=tmp_path,
        schema=SCHEMA,
        retry_degraded=True,
    )
    assert next(s for s in c.steps if s["node"] == "map")["to_extract"] == 1
    assert next(s for s in c.steps if s["node"] == "query")["rows"] == [[2]]


def test_sql_error_is_repaired(tmp_path):
    llm = scripted(["SELECT turnover FROM facts", "SELECT SUM(revenue) FROM facts"])
    a = answer(
        small_corpus(),
        "Total revenue?",
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
    )
    q = next(s for s in a.steps if s["node"] == "query")
    assert (
        q["ok"]
        and len(q["attempts"]) == 2
        and "no such column: turnover" in q["attempts"][0]["error"]
    )
    assert q["rows"] == [[2050.5]] and "no such column: turnover" in llm.calls[-2]["prompt"]
    assert a.answer == "The answer is: [2050.5]"


@pytest.mark.parametrize(
    "sql",
    [
        "ATTACH DATABASE '/tmp/other.db' AS other",
        "SELECT * FROM facts; ATTACH DATABASE 'x.db' AS x",
        "SELECT readfile('/etc/passwd')",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT load_extension('/tmp/evil.so')",
        "COPY facts TO '/tmp/out.csv'",
        "PRAGMA table_info(facts)",
        "SELECT * FROM read_parquet('https://example.org/x.parquet')",
        "DELETE FROM facts",
    ],
)
def test_unsafe_sql_is_refused(sql):
    with pytest.raises(QueryRefused):
        check_sql(sql)


def test_the_engine_refuses_what_the_text_check_misses():
    schema = parse_schema(SCHEMA)
    cells, _ = normalise_records(schema, [(0, "a", "A", TRUE["Acme 2023"])])
    conn = build_database(reduce_cells(schema, cells))
    for statement in (
        "ATTACH DATABASE ':memory:' AS other",
        "SELECT load_extension('x')",
        "INSERT INTO facts VALUES ('x', 1, 2, 'y')",
    ):
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute(statement)
    assert run_query(conn, "SELECT revenue FROM facts").rows == [[1200.0]]
    slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT MAX(x) FROM c"
    with pytest.raises(Exception, match="longer than"):
        run_query(conn, slow, timeout_s=0.05)


def test_reading_a_file_in_the_graph_is_refused_and_reported(tmp_path):
    llm = scripted(
        [
            "SELECT readfile('/etc/passwd')",
            "ATTACH DATABASE 'x.db' AS x",
            "SELECT * FROM read_csv('/etc/passwd')",
        ]
    )
    a = answer(
        small_corpus(),
        "Show me /etc/passwd",
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
    )
    q = next(s for s in a.steps if s["node"] == "query")
    assert (
        not q["ok"]
        and len(q["attempts"]) == 3
        and all("QueryRefused" in t["error"] for t in q["attempts"])
    )
    assert next(s for s in a.steps if s["node"] == "format_answer")["from_sql"] is False


# -- plan ---------------------------------------------------------------------------------
def planning_model(plan_reply, sql: str, final: str) -> ToolScriptedChatModel:
    """Plans with ``plan_reply(prompt, tools)``, extracts the true records, writes ``sql``,
    answers ``final``."""

    def reply(prompt, tools):
        if prompt.startswith("A question will be answered"):
            return plan_reply(prompt, tools)
        if prompt.startswith("Extract rows"):
            return [{"records": TRUE[re.search(r"^Document: (.+?)$", prompt, re.M).group(1)]}]
        if prompt.startswith("Every document"):
            return sql
        return final

    return ToolScriptedChatModel(reply_fn=reply)


def test_plan_by_tool_call_with_retry_and_schema_reuse(tmp_path):
    planned = iter(
        [
            [{"entity": "company", "attributes": []}],
            [SCHEMA],
            [{**SCHEMA, "attributes": SCHEMA["attributes"][:1]}],
        ]
    )

    def plan_reply(prompt, tools):
        assert tools and tools[0]["function"]["name"] == "define_table"
        return next(planned)

    llm = planning_model(plan_reply, "SELECT MAX(revenue) FROM facts", "The answer is: 1250")
    a = answer(
        small_corpus(), "Highest revenue?", strategy="structured", llm=llm, cache_dir=tmp_path
    )
    plan = next(s for s in a.steps if s["node"] == "plan")
    assert (
        plan["attempts"] == 2 and "attributes" in plan["errors"][0] and plan["tool_mode"] == "tools"
    )
    # a later question whose table is covered by the first one reuses it and its records
    b = answer(
        small_corpus(), "Highest revenue again?", strategy="structured", llm=llm, cache_dir=tmp_path
    )
    plan_b = next(s for s in b.steps if s["node"] == "plan")
    assert plan_b["reused_schema"] is True and len(plan_b["schema"]["attributes"]) == 2
    assert next(s for s in b.steps if s["node"] == "map")["to_extract"] == 0


def test_the_planner_sees_the_tables_already_filled_and_naming_one_again_reads_nothing(tmp_path):
    prompts = []

    def plan_reply(prompt, tools):
        prompts.append(prompt)
        if "Tables already filled" not in prompt:
            return [SCHEMA]
        # the listed table, named again with only the column the question needs
        assert (
            "- facts: one row per company and fiscal_year (year); columns: revenue (number, USD "
            "million), sector (text, static)" in prompt
        )
        return [{**SCHEMA, "attributes": SCHEMA["attributes"][1:]}]

    llm = planning_model(plan_reply, "SELECT COUNT(DISTINCT sector) FROM facts", "The answer is: 2")
    first = answer(
        small_corpus(), "Highest revenue?", strategy="structured", llm=llm, cache_dir=tmp_path
    )
    assert next(s for s in first.steps if s["node"] == "plan")["known_tables"] == 0
    extracted = sum(c["prompt"].startswith("Extract rows") for c in llm.calls)
    second = answer(
        small_corpus(), "How many sectors?", strategy="structured", llm=llm, cache_dir=tmp_path
    )
    plan = next(s for s in second.steps if s["node"] == "plan")
    assert plan["known_tables"] == 1 and plan["reused_schema"] is True
    assert next(s for s in second.steps if s["node"] == "map")["to_extract"] == 0
    assert sum(c["prompt"].startswith("Extract rows") for c in llm.calls) == extracted
    # known_tables=0 keeps the plan prompt as it was
    answer(
        small_corpus(),
        "Highest revenue?",
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        known_tables=0,
    )
    assert "Tables already filled" not in prompts[-1]


def test_json_mode_without_tools(tmp_path):
    def reply(prompt, tools):
        assert tools is None
        if prompt.startswith("A question will be answered"):
            return json.dumps(SCHEMA)
        if prompt.startswith("Extract rows"):
            return (
                "```json\n"
                + json.dumps(
                    {"records": TRUE[re.search(r"^Document: (.+?)$", prompt, re.M).group(1)]}
                )
                + "\n```"
            )
        if prompt.startswith("Every document"):
            return "SELECT company FROM facts ORDER BY revenue DESC LIMIT 1"
        return "The answer is: ACME CORP"

    llm = ToolScriptedChatModel(reply_fn=reply, supports_tools=False)
    a = answer(
        small_corpus(),
        "Which company had the highest revenue?",
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
    )
    assert next(s for s in a.steps if s["node"] == "query")["rows"] == [["ACME CORP"]]
    assert [e.title for e in a.evidence] == [
        "Acme 2024"
    ]  # the restated revenue, the column the SQL reads


@pytest.mark.parametrize(
    "documents,concurrency,size", [(250, 32, 4), (2_500, 32, 40), (10, 8, 1), (0, 8, 1), (17, 1, 9)]
)
def test_documents_per_extract_task(documents, concurrency, size):
    assert group_size(documents, concurrency) == size


def test_extract_tasks_go_out_in_groups_covering_every_document_once():
    state = {
        "question": Question(text="q"),
        "pending": list(range(10)),
        "fingerprints": {i: f"fp{i}" for i in range(10)},
        "schema": SCHEMA,
        "cache_key": "k",
        "window": 8000,
        "tool_mode": "tools",
        "split": [3],
        "group_size": 4,
    }
    sends = route_extract(state)
    groups = [send.arg["documents"] for send in sends]
    assert [len(g) for g in groups] == [4, 4, 2] and all(send.node == "extract" for send in sends)
    flat = [t["doc_index"] for g in groups for t in g]
    assert sorted(flat) == list(range(10)) and flat == [
        t["doc_index"] for t in extract_tasks(state)
    ]
    assert [t["split"] for g in groups for t in g if t["doc_index"] == 3] == [True]
    assert route_extract({**state, "pending": [], "fingerprints": {}}) == "reduce"


def test_extraction_calls_in_flight_stay_within_concurrency_on_a_real_server(tmp_path):
    """Groups run their documents concurrently under one gate per run: never more than
    ``concurrency`` extraction calls at the server, and all of them used."""
    from longctx.agents.chat_models import make_chat_model
    from tests.recording_server import RecordingServer

    corpus = Corpus.from_texts(
        [f"Company {i} (Retail) had revenue of ${i} million in FY2023." for i in range(24)],
        titles=[f"D{i}" for i in range(24)],
    )

    def reply(request):
        prompt = request["messages"][-1]["content"]
        if prompt.startswith("Extract rows"):
            return json.dumps({"records": []})
        return (
            "```sql\nSELECT COUNT(*) FROM facts\n```"
            if prompt.startswith("Every document")
            else "0"
        )

    with RecordingServer(reply, latency=0.05) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        a = answer(
            corpus,
            "How many companies?",
            strategy="structured",
            llm=llm,
            cache_dir=tmp_path,
            schema=SCHEMA,
            concurrency=3,
            tool_mode="json",
        )
    assert (
        sum(r["messages"][-1]["content"].startswith("Extract rows") for r in server.requests) == 24
    )
    assert server.max_in_flight == 3
    assert next(s for s in a.steps if s["node"] == "reduce")["extraction"]["calls"] == 24


@pytest.mark.parametrize("rule", ["keep", "drop"])
def test_a_value_whose_quote_is_not_in_the_text_is_marked_and_dropped_on_request(tmp_path, rule):
    """A made-up value (its quote is nowhere in the document) is counted and marked in the
    evidence when kept (the default), and left out of the table
    with ``unverified_values="drop"``."""
    corpus = Corpus.from_texts(
        ["Acme Corp had revenue of $5 million in FY2023.", "Birch Ltd is a retailer."],
        titles=["Acme", "Birch"],
    )

    def reply(prompt, tools):
        if prompt.startswith("Extract rows"):
            if "Acme Corp had revenue" in prompt:
                revenue = {"value": "$5 million", "quote": "Acme Corp had  REVENUE of $5 million"}
                return [
                    {
                        "records": [
                            {
                                "entity": "Acme Corp",
                                "period": "FY2023",
                                "values": {"revenue": revenue},
                            }
                        ]
                    }
                ]
            revenue = {"value": "$12,345.6 million", "quote": "Birch revenue was $12,345.6 million"}
            return [
                {
                    "records": [
                        {"entity": "Birch Ltd", "period": "FY2023", "values": {"revenue": revenue}}
                    ]
                }
            ]
        if prompt.startswith("Every document"):
            return "SELECT company, revenue FROM facts ORDER BY company"
        return "answered"

    a = answer(
        corpus,
        "Revenue of each company in FY2023?",
        strategy="structured",
        llm=ToolScriptedChatModel(reply_fn=reply),
        cache_dir=tmp_path,
        schema=SCHEMA,
        unverified_values=rule,
    )
    red = next(s for s in a.steps if s["node"] == "reduce")
    rows = next(s for s in a.steps if s["node"] == "query")["rows"]
    assert red["extraction"]["unverified_quotes"] == 1
    if rule == "keep":
        assert rows == [["Acme Corp", 5.0], ["Birch Ltd", 12345.6]]
        assert (red["unverified_values"], red["dropped_unverified"], red["unverified_cells"]) == (
            1,
            0,
            1,
        )
        marked = [e.text for e in a.evidence if "quote not found" in e.text]
        assert len(marked) == 1 and marked[0].startswith("Birch Ltd")
    else:
        assert rows == [["Acme Corp", 5.0]]
        assert (red["unverified_values"], red["dropped_unverified"], red["unverified_cells"]) == (
            0,
            1,
            0,
        )
        assert not [e for e in a.evidence if "quote not found" in e.text]


def test_long_documents_are_read_in_windows(tmp_path):
    filler = " ".join(["The fleet sailed along the coast."] * 400)
    corpus = Corpus.from_texts(
        [filler + " Acme Corp revenue FY2023 was $5 million. " + filler], titles=["Long"]
    )
    seen = []

    def reply(prompt, tools):
        if prompt.startswith("Extract rows"):
            seen.append(prompt)
            if "$5 million" in prompt:
                revenue = {
                    "value": "$5 million",
                    "quote": "Acme Corp revenue FY2023 was $5 million.",
                }
                return [
                    {
                        "records": [
                            {
                                "entity": "Acme Corp",
                                "period": "FY2023",
                                "values": {"revenue": revenue},
                            }
                        ]
                    }
                ]
            return [{"records": []}]
        if prompt.startswith("Every document"):
            return "SELECT revenue FROM facts"
        return "5"

    a = answer(
        corpus,
        "Acme revenue?",
        strategy="structured",
        llm=ToolScriptedChatModel(reply_fn=reply),
        cache_dir=tmp_path,
        schema=SCHEMA,
        window_tokens=1000,
        window_overlap=100,
    )
    assert len(seen) >= 3 and all("(part " in p for p in seen)
    assert next(s for s in a.steps if s["node"] == "query")["rows"] == [[5.0]]
    red = next(s for s in a.steps if s["node"] == "reduce")
    assert red["extraction"]["windows"] == len(seen) and red["extraction"]["unverified_quotes"] == 0


# -- cache ---------------------------------------------------------------------------------
def test_killed_run_resumes_from_the_record_cache(tmp_path):
    calls = {"n": 0}

    def reply(prompt, tools):
        if prompt.startswith("Extract rows"):
            calls["n"] += 1
            if calls["n"] == 3:
                raise RuntimeError("killed")
            return [{"records": TRUE[re.search(r"^Document: (.+?)$", prompt, re.M).group(1)]}]
        if prompt.startswith("Every document"):
            return "SELECT COUNT(*) FROM facts"
        return "2"

    llm = ToolScriptedChatModel(reply_fn=reply)
    with pytest.raises(RuntimeError, match="killed"):
        answer(
            small_corpus(),
            "How many?",
            strategy="structured",
            llm=llm,
            cache_dir=tmp_path,
            schema=SCHEMA,
            concurrency=1,
        )
    a = answer(
        small_corpus(),
        "How many?",
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
    )
    m = next(s for s in a.steps if s["node"] == "map")
    assert (m["cached"], m["to_extract"]) == (2, 1)


def _write_many(args):
    folder, worker = args
    cache = RecordCache(folder, "k" * 64, "model")
    for i in range(30):
        cache.put(
            "ab" + "0" * 62,
            [
                {
                    "entity": "E",
                    "period": None,
                    "values": {"v": {"value": str(i), "quote": f"w{worker}"}},
                }
            ],
        )
        assert cache.get("ab" + "0" * 62) is not None
    return True


def test_concurrent_writers_never_leave_a_torn_line(tmp_path):
    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(_write_many, [(tmp_path, w) for w in range(8)]))
    with ProcessPoolExecutor(3) as pool:
        assert all(pool.map(_write_many, [(tmp_path, w) for w in range(3)]))
    cache = RecordCache(tmp_path, "k" * 64, "model")
    assert cache.get("ab" + "0" * 62)["records"][0]["entity"] == "E"
    lines = cache.path.read_bytes().split(b"\n")
    assert (
        lines[-1] == b"" and len(lines) - 1 == 11 * 30
    )  # one whole line per put, from threads and processes
    assert all(
        json.loads(line.split(b"\t", 1)[1])["fingerprint"] == "ab" + "0" * 62 for line in lines[:-1]
    )
    assert [p.name for p in cache.folder.iterdir()] == ["records.jsonl"]


def test_unusable_log_line_is_skipped_and_extracted_again(tmp_path, caplog):
    llm = scripted(["SELECT COUNT(*) FROM facts"] * 3)
    answer(
        small_corpus(),
        "How many?",
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
    )
    (log_file,) = (tmp_path / "structured" / "records").rglob("records.jsonl")
    data = log_file.read_bytes()
    assert data.count(b"\n") == 3
    log_file.write_bytes(
        data.replace(b'"records": [', b'"records": {', 1)
    )  # one line no longer parses
    from longctx.graphs.structured import stores
    from longctx.memory.records import cache as cache_module

    cache_module._LOGS.clear()  # a new process's view
    stores._record_cache.cache_clear()
    b = answer(
        small_corpus(),
        "How many?",
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
    )
    assert next(s for s in b.steps if s["node"] == "map")["to_extract"] == 1
    assert "unusable" in caplog.text
    assert next(s for s in b.steps if s["node"] == "query")["rows"] == [[2]]
    c = answer(
        small_corpus(),
        "How many?",
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
    )
    assert (
        next(s for s in c.steps if s["node"] == "map")["to_extract"] == 0
    )  # the new line supersedes the torn one


def test_record_log_reads_what_other_writers_appended(tmp_path):
    mine, theirs = RecordCache(tmp_path, "k" * 64, "model"), None
    assert mine.get("a" * 64) is None
    from longctx.memory.records import cache as cache_module

    theirs = cache_module.RecordCache.__new__(cache_module.RecordCache)
    theirs.__dict__.update(
        mine.__dict__, log=cache_module.RecordLog(mine.path)
    )  # another process's view
    theirs.put("a" * 64, [{"entity": "A", "period": None, "values": {}}])
    with open(mine.path, "ab") as f:
        f.write(b"b" * 64 + b'\t{"version": 2')  # an unfinished line: not indexed until complete
    assert mine.get("a" * 64)["records"][0]["entity"] == "A" and mine.get("b" * 64) is None
    mine.path.unlink()  # removed under us: forgotten, then written anew
    assert mine.get("a" * 64) is None
    mine.put("c" * 64, [])
    assert mine.get("c" * 64)["records"] == []


# -- normalisation and config ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "unit", "expected"),
    [
        ("12.34B USD", "USD million", 12340.0),
        ("NOK 4.7 billion", "NOK million", 4700.0),
        ("$12,345,600 thousand", "USD million", 12345.6),
        ("12,345,600,000 USD", "USD million", 12345.6),
        ("USD -12,345.6M", "USD million", -12345.6),
        ("-$12,345.6 million", "USD million", -12345.6),
        ("(1,234.5)", "USD million", -1234.5),
        ("12,345.6", "USD million", 12345.6),
        ("45.2 per cent", "%", 45.2),
        ("45.2%", "%", 45.2),
        ("1.234.567,8", "EUR", 1234567.8),
        ("NOK 4,7 mrd", "NOK", 4.7),
        ("1,234", "count", 1234.0),
        ("$1.23", "USD", 1.23),
        ("612 million", "NOK billion", 0.612),
    ],
)
def test_numbers_and_units(raw, unit, expected):
    assert to_unit(raw, unit)[0] == pytest.approx(expected, abs=1e-12)


def test_currency_mismatch_is_noted_not_converted():
    value, note = to_unit("NOK 4.7 billion", "USD million")
    assert value == 4700.0 and "NOK" in note


def test_periods():
    periods = ("FY2024", "Fall 2023", "fiscal 2022", "FY24", 2021, None, "n/a")
    assert [normalize_period(p, "year") for p in periods] == [
        2024,
        2023,
        2022,
        2024,
        2021,
        None,
        None,
    ]


def test_config_is_validated():
    spec = STRATEGIES.get("structured")
    with pytest.raises(ConfigError, match="schema"):
        spec.make_config(schema={"entity": "x", "attributes": []})
    with pytest.raises(ConfigError, match="window_overlap"):
        spec.make_config(window_tokens=400, window_overlap=300)
    with pytest.raises(ConfigError):
        spec.make_config(conflict_rule="newest")
    with pytest.raises(ConfigError, match="unverified_values"):
        spec.make_config(unverified_values="warn")
    with pytest.raises(ConfigError, match="temperature"):
        spec.make_config(temperature=3.0)
    assert spec.make_config(schema=SCHEMA).schema == SCHEMA
    assert TableSchema.model_validate(SCHEMA).covers(
        TableSchema.model_validate({**SCHEMA, "attributes": SCHEMA["attributes"][:1]})
    )
    with pytest.raises(ConfigError, match="map_executor"):
        spec.make_config(map_executor="dask")
    with pytest.raises(ConfigError, match="ray_address.*map_executor='ray'"):
        spec.make_config(ray_address="auto")
    with pytest.raises(ConfigError, match="ray_batch_documents"):
        spec.make_config(map_executor="ray", ray_batch_documents=0)
    assert spec.make_config(map_executor="ray", ray_address="auto").ray_address == "auto"


def test_ray_workers_rebuild_an_openai_model_and_its_usage_reaches_the_answer():
    """No Ray needed: the recipe a Ray task gets, and the usage event the caller reports."""
    from langchain_core.callbacks import CallbackManager

    from longctx import make_chat_model
    from longctx.graphs.calls.llm import model_id, tokenizer_spec
    from longctx.graphs.metering.usage import USAGE_EVENT, UsageTracker
    from longctx.graphs.structured.ray_map import model_recipe

    llm = make_chat_model(
        "openai:m", base_url="http://127.0.0.1:9/v1", timeout=7, max_retries=1, tokenizer="cl100k"
    )
    recipe = model_recipe(llm)
    assert (
        recipe.model is None and recipe.name == "m" and "api_key" not in recipe.options
    )  # the key stays home
    assert pickle.loads(pickle.dumps(recipe)).model_class is type(
        llm
    )  # the class travels by reference
    rebuilt = recipe.build()
    assert model_id(rebuilt) == model_id(llm) and tokenizer_spec(rebuilt) == "cl100k"
    assert (rebuilt.request_timeout, rebuilt.max_retries) == (7.0, 1)
    tracker = UsageTracker()
    manager = CallbackManager(handlers=[tracker])
    manager.on_custom_event(
        USAGE_EVENT, {"llm_calls": 3, "prompt_tokens": 30, "completion_tokens": 5}, run_id=None
    )
    manager.on_custom_event("other", {"llm_calls": 9}, run_id=None)
    assert (
        tracker.usage.llm_calls,
        tracker.usage.prompt_tokens,
        tracker.usage.completion_tokens,
    ) == (3, 30, 5)


# -- end to end on the embedded model --------------------------------------------------------
@pytest.mark.e2e
@pytest.mark.slow
def test_structured_on_the_embedded_model_over_examples(tmp_path):
    corpus = Corpus.from_path(Path(__file__).parent.parent / "examples" / "corpus")
    questions = {"Which company had the highest revenue in 2023?": "halvorsen"}
    for text, expected in questions.items():
        a = answer(
            corpus,
            text,
            strategy="structured",
            llm="embedded",
            cache_dir=tmp_path,
            retries=1,
            sql_retries=1,
            extract_max_tokens=768,
            plan_max_tokens=512,
            concurrency=2,
        )
        steps = {s["node"] for s in a.steps}
        assert {"plan", "map", "reduce", "query", "format_answer"} <= steps
        print(
            f"\nstructured/embedded: {text!r} -> {a.answer!r} (expected to mention {expected!r}: "
            f"{expected in a.answer.lower()}); calls {a.usage.llm_calls}, steps "
            f"{[(s['node'], s.get('ok', s.get('rows'))) for s in a.steps]}"
        )


def test_a_failing_extraction_raises_the_chat_model_error_itself_on_the_async_path(tmp_path):
    """A document whose calls fail after the retries fails the answer with its ChatModelError
    (not an exception group of the task's documents), and the group's other documents stop."""
    from benchmarks.stub_server import stub_server
    from longctx.agents.chat_models import ChatModelError, make_chat_model

    corpus = Corpus.from_texts(
        [f"Company {i} had revenue of ${i} million in FY2023." for i in range(12)],
        titles=[f"D{i}" for i in range(12)],
    )
    with stub_server(latency=0.0, tools=True, fault="500") as url:
        llm = make_chat_model("openai:stub", base_url=url, max_retries=0)
        with pytest.raises(ChatModelError) as info:
            answer(
                corpus,
                "How many companies?",
                strategy="structured",
                llm=llm,
                cache_dir=tmp_path,
                schema=SCHEMA,
                concurrency=2,
            )
    assert info.value.status == 500


@pytest.mark.parametrize(
    "options,message",
    [
        ({"ray_endpoints": ["http://a/v1"]}, "needs map_executor='ray'"),
        ({"map_executor": "ray", "ray_endpoints": ["gpu1:8000"]}, "http(s) base URLs"),
        ({"map_executor": "ray", "ray_endpoints": "http://a/v1"}, "ray_endpoints"),
    ],
)
def test_ray_endpoints_are_validated(options, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        STRATEGIES.get("structured").make_config(**options)


def test_ray_endpoints_need_an_openai_model():
    from longctx.graphs.structured.ray_map import model_recipe

    with pytest.raises(TypeError, match="OpenAI-compatible"):
        model_recipe(ToolScriptedChatModel(reply_fn=lambda prompt, tools: ""), "http://a/v1")
