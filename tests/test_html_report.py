"""report.html: one self-contained page with the summary, plots, winners, estimated cost and a
per-question drill-down, built from rows of a real ``run_experiment`` with a scripted model;
checked as text here and in a real headless Chromium when one is installed."""

from __future__ import annotations

import copy
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from longctx import Question
from longctx.experiments.benchmarks import Sample
from longctx.experiments.metrics.equivalence import equivalent
from longctx.experiments.planning.prices import (
    DEFAULT_PRICES_DATE,
    PriceTableError,
    is_local,
    load_prices,
    price_for,
)
from longctx.experiments.reports.html_report import pick_winners
from longctx.experiments.reports.html_report.drilldown import answer_details
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from longctx.retrieval import Corpus
from tests.scripted_tools import ToolScriptedChatModel

#: The strategies whose calls world() scripts: a subset on purpose (RAPTOR and HippoRAG embed the
#: corpus, structured has its own report tests).
STRATEGIES = ("rag", "full_context", "memagent", "pai", "pai_minus", "self_ask", "self_route")
EVIL_TITLE = 'Vault <script>alert("x")</script> & "Co"'
PRICES = {"ToolScriptedChatModel": {"prompt": 1.0, "completion": 2.0}}


#: The replies of world() to the calls it knows by their prompt's opening.
OPENINGS = {
    "Identify the key properties": [{"metric": "secret code", "subject": "museum vault"}],
    "Break the query": [{"sub_question": "What is the secret code of the museum vault?"}],
    "Answer the sub-question": "The museum vault code is 7421.",
    "Answer the question below": "Conclusion: 7421",
}


def world(prompt: str, tools) -> object:
    """One scripted model for every strategy: PAI's properties/judge/sub-answers, Self-Ask's
    follow-up loop, MemAgent's memory, Self-Route declining the lighthouse question."""
    for opening, reply in OPENINGS.items():
        if prompt.startswith(opening):
            return copy.deepcopy(reply)
    if prompt.startswith("Query: "):
        return [{"keep_context": "7421" in prompt}]
    if "Are follow up questions needed here" in prompt:  # FlashRAG self-ask: stops before each cue
        if prompt.rstrip().endswith("Follow up: What is the vault code?"):
            return "Intermediate answer: The vault code is 7421.\nSo the final answer is: 7421"
        return "Yes.\nFollow up: What is the vault code?\n"
    if "Updated memory" in prompt or ("memory" in prompt.lower() and "chunk" in prompt.lower()):
        return "Memory: the vault code is 7421." if "7421" in prompt else "Memory: nothing yet <i>."
    if "Write unanswerable" in prompt and "lighthouse?" in prompt:
        return "unanswerable"
    if "lighthouse?" in prompt:
        return "The answer is: the harbour authority"
    return "The answer is: 7421"


def make_samples() -> list[Sample]:
    corpus = Corpus.from_texts(
        [
            "Filler about parking rules. " * 20
            + "The secret code of the museum vault is 7421. <b>bold</b>",
            "The harbour authority repainted the lighthouse after the winter storms. " * 10,
        ],
        titles=[EVIL_TITLE, "Harbour"],
    )
    questions = [
        ("What is the secret code of the museum vault?", "7421"),
        ("Who repainted the lighthouse?", "the harbour authority"),
    ]
    return [
        Sample(
            sample_id=f"q{i}",
            benchmark="synth",
            dataset="finance",
            corpus=corpus,
            question=Question(text=q, instruction='Reply "The answer is: X".'),
            answers=(a,),
            metadata={"question": q, "difficulty": "easy"},
        )
        for i, (q, a) in enumerate(questions)
    ]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A real run of every strategy (2 questions), and its report with a user price table."""
    out = tmp_path_factory.mktemp("run")
    samples = make_samples()
    options = {
        "memagent": {"chunk_tokens": 64},
        "pai": {"chunk_size": 64},
        "pai_minus": {"chunk_size": 64},
        "rag": {"top_k": 2},
    }
    cfg = RunConfig(
        benchmark="synth", strategies=STRATEGIES, llm_cache=False, strategy_options=options
    )
    run_experiment(
        cfg, out, llm=ToolScriptedChatModel(reply_fn=world), samples=samples, show_progress=False
    )
    result = build_report(out, samples=samples, prices=PRICES)
    page = Path(result["html"]).read_text(encoding="utf-8")
    return {"out": out, "result": result, "html": page, "rows": read_rows(out), "samples": samples}


def question_block(page: str, sample_id: str) -> str:
    start = page.index(f'<details class="question" id="q-{sample_id}"')
    end = page.find('<details class="question"', start + 1)
    return page[start : end if end > 0 else len(page)]


def answer_block(block: str, strategy: str) -> str:
    start = block.index(f'<details class="answer" data-strategy="{strategy}"')
    end = block.find('<details class="answer"', start + 1)
    return block[start : end if end > 0 else len(block)]


# -- the page --------------------------------------------------------------------------------------
def test_report_html_is_written_beside_the_tables_and_is_self_contained(run):
    folder = run["out"] / "report"
    assert (folder / "report.html").is_file() and (folder / "summary.md").is_file()
    page = run["html"]
    assert not re.search(
        r"""(src|href)\s*=\s*["']?(https?:)?//""", page
    )  # nothing fetched at view time
    assert "url(" not in page and "@import" not in page
    # accuracy vs tokens and vs USD (priced), cost per question; one length bucket: no length plot
    assert page.count('src="data:image/png;base64,') == 3
    assert 'id="summary"' in page and all(f'<tr data-strategy="{s}">' in page for s in STRATEGIES)


def test_every_string_from_the_data_is_escaped(run):
    page = run["html"]
    assert page.count("<script>") == 1  # the report's own
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;Co&quot;" in page
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "<i>." not in page and "&lt;i&gt;." in page  # a memory written by the model
    assert (
        "&amp;lt;" not in page and '<td class="num">&lt;32K</td>' in page
    )  # escaped once, not twice


def test_drill_down_shows_each_strategys_answer_score_cost_evidence_and_steps(run):
    q0 = question_block(run["html"], "q0")
    assert (
        "What is the secret code of the museum vault?" in q0
        and '<p class="gold"><b>Gold answer</b> <span>7421</span>' in q0
    )
    for strategy in STRATEGIES:
        block = answer_block(q0, strategy)
        row = next(r for r in run["rows"] if r["sample_id"] == "q0" and r["strategy"] == strategy)
        assert f'<pre class="ans">{html.escape(row["answer"])}</pre>' in block, strategy
        assert '<span class="sc">score <span class="score">' in block and "$0.0" in block
        assert '<div class="evidence">' in block and '<details class="steps" open>' in block
    rag = answer_block(q0, "rag")
    evidence = next(r for r in run["rows"] if r["sample_id"] == "q0" and r["strategy"] == "rag")[
        "evidence"
    ]
    assert (
        evidence
        and f'<span class="title">{html.escape(EVIL_TITLE)}</span>' in rag
        and html.escape(evidence[0]["snippet"]) in rag
    )


def test_memagent_shows_the_memory_after_each_chunk(run):
    block = answer_block(question_block(run["html"], "q0"), "memagent")
    steps = [
        s
        for s in next(
            r for r in run["rows"] if r["sample_id"] == "q0" and r["strategy"] == "memagent"
        )["steps"]
        if s["node"] == "update_memory"
    ]
    assert len(steps) > 2 and 'data-node="update_memory"' in block
    assert f"Memory after each chunk ({len(steps)} chunks read)" in block
    assert "Memory: nothing yet &lt;i&gt;." in block and "Memory: the vault code is 7421." in block
    assert "(unchanged)" in block  # a run of equal memories is one row


def test_pai_shows_properties_kept_chunks_and_sub_answers(run):
    block = answer_block(question_block(run["html"], "q0"), "pai")
    assert (
        '<p class="what">Properties</p><ul><li><b>secret code</b> of <b>museum vault</b></li></ul>'
        in block
    )
    assert "Kept chunks per sub-question" in block and "kept 1 of" in block
    kept = re.search(r"Kept chunks per sub-question.*?</ul></li></ul>", block, re.S).group(0)
    assert "7421. &lt;b&gt;bold&lt;/b&gt;" in kept  # the kept chunk's own text, from the evidence
    assert (
        "Sub-answers" in block
        and "The museum vault code is 7421." in block
        and "Conclusion" in block
    )
    minus = answer_block(question_block(run["html"], "q0"), "pai_minus")
    assert "Sub-questions" in minus and "Properties" not in minus and "Sub-answers" in minus


def test_self_ask_shows_its_follow_ups_and_transcript(run):
    block = answer_block(question_block(run["html"], "q0"), "self_ask")
    assert 'Follow-up: <span class="follow">What is the vault code?</span>' in block
    assert 'data-node="retrieve_follow_up"' in block and 'data-node="finish"' in block
    assert (
        "Intermediate answer: The vault code is 7421." in block
        and '<pre class="transcript">' in block
    )


def test_self_route_shows_route_and_reason(run):
    rag_answered = answer_block(question_block(run["html"], "q0"), "self_route")
    assert 'Route: <b>rag</b> · reason: <span class="reason">RAG answered</span>' in rag_answered
    declined = answer_block(question_block(run["html"], "q1"), "self_route")
    row = next(r for r in run["rows"] if r["sample_id"] == "q1" and r["strategy"] == "self_route")
    reason = next(s for s in row["steps"] if s["node"] == "measure_context")["reason"]
    assert (
        "Route: <b>full_context</b>" in declined
        and reason
        and reason in declined.replace("&#x27;", "'")
    )


def test_scores_in_the_page_are_the_scorers_per_sample_scores(run):
    for sample_id in ("q0", "q1"):
        official = json.loads((run["out"] / "report" / "scores.json").read_text())
        block = question_block(run["html"], sample_id)
        for strategy in STRATEGIES:
            value = official[strategy]["per_sample"][sample_id]
            assert f'{strategy}: <span class="score">{value:g}</span>' in block, (
                sample_id,
                strategy,
            )


def test_costs_use_the_user_price_table(run):
    page = run["html"]
    rows = [r for r in run["rows"] if r["strategy"] == "memagent"]
    total = (
        sum(r["usage"]["prompt_tokens"] * 1.0 + r["usage"]["completion_tokens"] * 2.0 for r in rows)
        / 1e6
    )
    row = re.search(r'<tr data-strategy="memagent">.*?</tr>', page).group(0)
    assert (f"${total:,.4f}" if total < 1 else f"${total:,.2f}") in row
    assert (
        "your --prices file" in page and "<b>estimate</b>" in page and DEFAULT_PRICES_DATE in page
    )


def test_unknown_model_price_is_n_a_not_zero(run):
    result = build_report(run["out"], samples=run["samples"], plots=False)
    page = Path(result["html"]).read_text()
    assert (
        "unknown: add it to a --prices file" in page
        and ">n/a</span>" in page
        and 'data-metric="cost_usd"' not in page
    )


def test_winner_per_metric_in_the_page(run):
    page = run["html"]
    winners = re.search(r'<section id="winners">.*?</section>', page, re.S).group(0)
    assert (
        'data-metric="score"' in winners
        and 'data-metric="cost_usd"' in winners
        and 'data-metric="tokens"' in winners
    )


# -- winners, prices, failures ---------------------------------------------------------------------
def test_the_leader_of_a_tie_is_the_cheaper_strategy_but_no_winner_is_named_untested():
    rows = [
        {"strategy": "rag", "score": 80.0, "cost_usd": 0.02, "tokens": 2000, "seconds": 1.0},
        {"strategy": "pai", "score": 80.0, "cost_usd": 0.50, "tokens": 90000, "seconds": 9.0},
        {
            "strategy": "full_context",
            "score": 60.0,
            "cost_usd": 0.02,
            "tokens": 1500,
            "seconds": 0.5,
        },
    ]
    won = {w["metric"]: w for w in pick_winners(rows)}
    assert (
        won["score"]["leader"] == "rag" and won["cost_usd"]["leader"] == "rag"
    )  # cost tie: the better score
    assert won["tokens"]["leader"] == "full_context" and won["seconds"]["leader"] == "full_context"
    assert (
        all(w["strategies"] == [] and "not tested" in w["note"] for w in won.values())
        and "evidence_recall" not in won
    )
    same = [
        {"strategy": "a", "score": 50.0, "tokens": 10},
        {"strategy": "b", "score": 50.0, "tokens": 10},
    ]
    assert {w["metric"]: w for w in pick_winners(same)}["score"]["leader"] == "a"


def _binary_scores(n: int, rates: dict[str, float]) -> dict[str, dict[str, float]]:
    """Deterministic 0/100 scores: strategy s right on the first rate*n questions."""
    return {s: {f"q{i}": 100.0 * (i < rate * n) for i in range(n)} for s, rate in rates.items()}


def test_a_30_point_gap_on_200_questions_names_a_winner_and_near_equal_on_5_does_not():
    big = _binary_scores(200, {"rag": 0.8, "pai": 0.5, "full_context": 0.45})
    rows = [{"strategy": s, "score": sum(v.values()) / 200} for s, v in big.items()]
    (won,) = pick_winners(rows, {"score": big})
    assert (
        won["strategies"] == ["rag"]
        and won["significant"]
        and "beats every other strategy" in won["note"]
    )
    small = _binary_scores(5, {"rag": 0.8, "pai": 0.6})
    rows = [{"strategy": s, "score": sum(v.values()) / 5} for s, v in small.items()]
    (won,) = pick_winners(rows, {"score": small})
    assert won["strategies"] == [] and won["leader"] == "rag" and not won["significant"]
    assert (
        "no difference can be significant on n=5 questions" in won["note"]
        and "detect differences of about" not in won["note"]
    )


def test_a_winner_must_beat_every_rival_not_only_the_last():
    scores = _binary_scores(200, {"rag": 0.8, "pai": 0.78, "full_context": 0.3})
    rows = [{"strategy": s, "score": sum(v.values()) / 200} for s, v in scores.items()]
    (won,) = pick_winners(rows, {"score": scores})
    assert won["strategies"] == [] and "against pai" in won["note"]


def test_lower_is_better_metrics_are_tested_in_their_direction():
    tokens = {
        "rag": {f"q{i}": 1000.0 + i for i in range(40)},
        "pai": {f"q{i}": 90000.0 + 7 * i for i in range(40)},
    }
    rows = [{"strategy": "rag", "tokens": 1019.5}, {"strategy": "pai", "tokens": 90136.5}]
    (won,) = pick_winners(rows, {"tokens": tokens})
    assert won["strategies"] == ["rag"] and won["metric"] == "tokens"


def test_price_lookup_user_table_local_models_and_built_in_estimate():
    assert price_for("gpt-4o-mini").source == "default" and price_for("gpt-4o-mini").prompt == 0.15
    assert (
        price_for("gpt-4o-2024-08-06").key == "gpt-4o"
    )  # dated snapshot: the longest matching entry
    assert price_for("gpt-4o-mini-2024-07-18").key == "gpt-4o-mini"
    assert price_for("openai/gpt-4o-mini @ https://openrouter.example/api/v1").key == "gpt-4o-mini"
    assert (
        price_for("SmolLM2-135M-Instruct-Q4_1.gguf").source == "local"
        and price_for("qwen @ http://localhost:8000/v1").cost(1e6, 1e6) == 0
    )
    assert is_local("m @ http://10.0.0.5:8000/v1") and not is_local(
        "m @ https://api.example.com/v1"
    )
    assert price_for("my-model") is None
    user = {"my-model": (1.0, 3.0), "qwen @ http://localhost:8000/v1": (0.5, 0.5)}
    assert price_for("my-model", user).cost(2_000_000, 1_000_000) == pytest.approx(5.0)
    assert (
        price_for("qwen @ http://localhost:8000/v1", user).source == "user"
    )  # the user may price a local server


def test_price_file_is_validated(tmp_path):
    good = tmp_path / "p.json"
    good.write_text(json.dumps({"m": {"input": 1, "output": 2}}))
    assert load_prices(good) == {"m": (1.0, 2.0)}
    for bad in (
        "[1, 2]",
        '{"m": 3}',
        '{"m": {"prompt": -1, "completion": 1}}',
        '{"m": {"prompt": 1}}',
        "{nope",
    ):
        (tmp_path / "bad.json").write_text(bad)
        with pytest.raises(PriceTableError):
            load_prices(tmp_path / "bad.json")
    with pytest.raises(PriceTableError, match="Cannot read"):
        load_prices(tmp_path / "missing.json")


def test_cli_report_takes_prices_and_a_bad_file_is_a_one_line_error(
    run, tmp_path, monkeypatch, capsys
):
    from longctx.experiments.cli import app as cli

    monkeypatch.setattr(
        "longctx.experiments.reports.report.run_samples", lambda cfg: run["samples"]
    )
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    assert cli.main(["report", str(run["out"]), "--prices", str(prices), "--no-plots"]) == 0
    assert "report.html" in capsys.readouterr().out
    prices.write_text("{broken")
    assert cli.main(["report", str(run["out"]), "--prices", str(prices)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("longctx: error: The price table") and err.count("\n") == 1


def test_a_failed_answer_shows_its_error_and_traceback():
    row = {
        "sample_id": "q9",
        "strategy": "rag",
        "status": "failed",
        "error": "ConnectionError: <gone>",
        "traceback": "Traceback ...",
    }
    block = answer_details("rag", row, None, {"prices": {}}, {"model": "m"})
    assert (
        '<span class="fail">failed</span>' in block
        and "ConnectionError: &lt;gone&gt;" in block
        and "Traceback ..." in block
    )


def test_an_empty_reply_scores_zero_instead_of_breaking_the_report():
    assert equivalent("", "7421") is False and equivalent("-$5", "-5") is True


# -- a real browser --------------------------------------------------------------------------------
def _chromium() -> str | None:
    return next(
        (
            path
            for name in ("chromium", "chromium-browser", "google-chrome", "chrome")
            if (path := shutil.which(name))
        ),
        None,
    )


def open_in_chromium(url: str, tmp_path: Path, *flags: str) -> tuple[str, list[str]]:
    """The DOM after load (scripts run) and the page's console messages, from headless Chromium
    (``flags``: e.g. a window size)."""
    command = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        *flags,
        "--dump-dom",
        url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [
        line for line in done.stderr.splitlines() if ":CONSOLE" in line
    ]  # every console message, errors included
    return done.stdout, console


@pytest.mark.skipif(
    _chromium() is None, reason="no Chromium installed (apt-get install -y chromium)"
)
def test_report_opens_in_headless_chromium_with_a_drill_down(run, tmp_path):
    page = run["out"] / "report" / "report.html"
    dom, console = open_in_chromium(page.as_uri() + "#q-q0", tmp_path)
    assert console == []  # no errors, no blocked requests (the page's CSP allows none), no logs
    assert 'data-ready="1"' in dom  # the page's script ran to its end
    assert '<table class="summary">' in dom and all(
        f'<tr data-strategy="{s}">' in dom for s in STRATEGIES
    )
    q0 = question_block(dom, "q0")
    assert re.match(
        r'<details class="question" id="q-q0"[^>]* open=""', q0
    )  # opened from the address
    for strategy in STRATEGIES:
        block = answer_block(q0, strategy)
        assert re.match(r'<details class="answer" data-strategy="[a-z_]+" open=""', block), strategy
        assert (
            '<pre class="ans">' in block
            and '<div class="evidence">' in block
            and 'class="step"' in block
        ), strategy
    assert 'open=""' not in question_block(dom, "q1").split(">", 1)[0]


#: Appended to a copy of the page: each interval header and cell's box against the summary's visible
#: box, written into the DOM.
MEASURE = """<script>
var box = document.querySelector("#summary .wide").getBoundingClientRect();
var allCells = document.querySelectorAll("#summary th, #summary td");
var cells = Array.prototype.filter.call(allCells, function (c) {
  var i = Array.prototype.indexOf.call(c.parentNode.children, c);
  var head = document.querySelectorAll("#summary thead th")[i].textContent;
  return /interval|score_ci/.test(head);
});
var shown = cells.filter(function (c) {
  var r = c.getBoundingClientRect();
  return r.left >= box.left && r.right <= Math.min(box.right, window.innerWidth) + 0.5;
});
document.body.setAttribute("data-interval-cells", cells.length + "/" + shown.length);
</script>"""


@pytest.mark.skipif(
    _chromium() is None, reason="no Chromium installed (apt-get install -y chromium)"
)
def test_the_score_intervals_are_in_view_at_1400_px_without_scrolling(run, tmp_path):
    """Seven strategies' summary: the interval beside the score, not past the table's
    scroll edge."""
    page = (run["out"] / "report" / "report.html").read_text(encoding="utf-8")
    measured = tmp_path / "measured.html"
    measured.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom, _ = open_in_chromium(measured.as_uri(), tmp_path, "--window-size=1400,1000")
    counted = re.search(r'data-interval-cells="(\d+)/(\d+)"', dom)
    assert (
        counted
        and int(counted.group(1)) >= len(STRATEGIES) + 1
        and counted.group(1) == counted.group(2)
    )


def test_no_minus_zero_and_no_zero_width_interval_beside_a_p_of_a_quarter(tmp_path):
    """Three questions all right: the interval is the exact binomial one, never [100, 100]; a tie
    reads 0, never -0."""
    from longctx.experiments.reports.comparison import pairwise
    from longctx.experiments.reports.html_report.tables import pairwise_section, summary_section

    pairs = pairwise(
        {
            "a": {"q1": 100.0, "q2": 100.0, "q3": 100.0},
            "b": {"q1": 100.0, "q2": 100.0, "q3": 100.0},
            "c": {"q1": 0.0, "q2": 0.0, "q3": 0.0},
        }
    )
    matrix = pairwise_section(pairs, ["a", "b", "c"])
    assert (
        ">-0<" not in matrix
        and "[-0," not in matrix
        and ", -0]" not in matrix
        and '">0<br>' in matrix
    )
    assert (
        "[100, 100]" not in matrix
        and "[-100, -100]" not in matrix
        and matrix.count(">no interval</span>") == 6
    )  # beside p 0.75
    assert (
        summary_section(
            [
                {
                    "strategy": "a",
                    "score": 100.0,
                    "score_ci_low": 29.24,
                    "score_ci_high": 100.0,
                    "n_scored": 3,
                }
            ]
        ).count("[29.2, 100]")
        == 1
    )
    none = summary_section(
        [
            {
                "strategy": "f1",
                "score": 50.0,
                "score_ci_low": None,
                "score_ci_high": None,
                "n_scored": 3,
            }
        ]
    )
    assert 'class="num ci"><span class="na"' in none and "[50, 50]" not in none


def test_an_interrupted_run_lists_every_strategy_and_question_and_names_no_winner(tmp_path):
    """Rows of one answer of three strategies x two questions: the report keeps all of them
    in view."""
    samples = make_samples()
    out = tmp_path / "run"
    cfg = RunConfig(
        benchmark="synth",
        strategies=("rag", "full_context", "memagent"),
        llm_cache=False,
        strategy_options={"rag": {"top_k": 2}, "memagent": {"chunk_tokens": 64}},
    )
    run_experiment(
        cfg, out, llm=ToolScriptedChatModel(reply_fn=world), samples=samples, show_progress=False
    )
    lines = (out / "results.jsonl").read_text().splitlines()
    kept = [
        line
        for line in lines
        if json.loads(line)["strategy"] == "rag" and json.loads(line)["sample_id"] == "q0"
    ]
    (out / "results.jsonl").write_text(kept[0] + "\n")  # as if killed after the first answer
    result = build_report(out, samples=samples, plots=False)
    summary = {r["strategy"]: r for r in result["summary"]}
    assert set(summary) == {"rag", "full_context", "memagent"}
    assert (summary["rag"]["answers"], summary["rag"]["missing"]) == (1, 1)
    assert (
        summary["memagent"]["answers"],
        summary["memagent"]["missing"],
        summary["memagent"]["score"],
    ) == (0, 2, None)
    assert result["winners"] == [] and result["missing"] == {
        "rag": 1,
        "full_context": 2,
        "memagent": 2,
    }
    text = (out / "report" / "significance.md").read_text()
    assert text.startswith("Incomplete run") and "memagent 2 of 2" in text and "No winner" in text
    page = Path(result["html"]).read_text()
    assert (
        'id="incomplete"' in page
        and 'data-significant="1"' not in page
        and "Best score" not in page
    )
    assert all(f'data-sample="{s.sample_id}"' in page for s in samples)
    q1 = question_block(page, "q1")
    assert q1.count("not answered yet") == 3
    assert "memagent" in re.search(r"<dt>strategies</dt><dd>(.*?)</dd>", page).group(1)


def test_the_drilldown_shows_the_messages_sent_and_how_much_full_context_cut(tmp_path):
    long_doc = (
        "Filler about parking rules and ferry timetables. " * 400
        + "The secret code of the museum vault is 7421."
    )
    corpus = Corpus.from_texts([long_doc], titles=["Vault"])
    sample = Sample(
        sample_id="q0",
        benchmark="synth",
        dataset="finance",
        corpus=corpus,
        question=Question(
            text="What is the secret code of the museum vault?",
            instruction='Reply "The answer is: X".',
        ),
        answers=("7421",),
        metadata={"question": "What is the secret code of the museum vault?"},
    )
    out = tmp_path / "run"
    cfg = RunConfig(
        benchmark="synth",
        strategies=("full_context",),
        llm_cache=False,
        strategy_options={"full_context": {"context_window": 1200}},
    )
    run_experiment(
        cfg, out, llm=ToolScriptedChatModel(reply_fn=world), samples=[sample], show_progress=False
    )
    (row,) = read_rows(out)
    assert (
        row["messages"][0]["role"] == "human"
        and "What is the secret code of the museum vault?" in row["messages"][0]["content"]
    )
    page = Path(build_report(out, samples=[sample], plots=False)["html"]).read_text()
    block = answer_block(question_block(page, "q0"), "full_context")
    assert (
        '<details class="messages">' in block
        and "Messages sent (last model call, 1 message(s)" in block
    )
    assert (
        "Context cut" in block
        and f"-token corpus (about {corpus.num_tokens - row['usage']['prompt_tokens']:,} cut"
        in block
    )


def test_a_huge_message_is_kept_by_its_head_and_tail_with_a_marker():
    from langchain_core.messages import HumanMessage

    from longctx.graphs.metering.usage import sent_messages

    (kept,) = sent_messages([HumanMessage(content="A" * 100 + "B" * 1000 + "C" * 100)], limit=200)
    assert (
        kept["content"].startswith("A" * 100)
        and kept["content"].endswith("C" * 100)
        and "1,000 characters not kept" in kept["content"]
    )
    assert sent_messages([HumanMessage(content="short")]) == [{"role": "human", "content": "short"}]
