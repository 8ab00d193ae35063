"""report.html holds what the Markdown report has: BABILong's task x length tables, the cost per
context with a legend per column (also under per_context.md's table), and an accuracy-vs-USD plot
when the models have a price. The page is parsed, not searched for strings."""

from __future__ import annotations

import csv
import json
from html.parser import HTMLParser
from pathlib import Path

from longctx import Question
from longctx.experiments.benchmarks import Sample, load_benchmark
from longctx.experiments.planning.context_costs import COLUMNS
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import RunConfig, run_experiment
from longctx.retrieval import Corpus
from tests.scripted import ScriptedChatModel

BABILONG = Path(__file__).parent / "fixtures" / "benchmarks" / "babilong"
USD_PLOT = "Accuracy vs estimated USD per answer (priced models only)"


class Page(HTMLParser):
    """Per ``<section id>``: its tables (rows of cell texts, with the table's ``data-strategy``),
    its images' ``alt`` texts and its legend items by ``data-column``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.sections: dict[str, dict] = {}
        self._section: dict | None = None
        self._cell: list[str] | None = None
        self._item: tuple[str, list[str]] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "section":
            self._section = self.sections[a["id"]] = {"tables": [], "images": [], "legend": {}}
        elif self._section is None:
            return
        elif tag == "table":
            self._section["tables"].append({"strategy": a.get("data-strategy"), "rows": []})
        elif tag == "tr":
            self._section["tables"][-1]["rows"].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "img":
            self._section["images"].append(a["alt"])
        elif tag == "li" and "data-column" in a:
            self._item = (a["data-column"], [])

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self._section = None
        elif tag in ("td", "th") and self._cell is not None and self._section is not None:
            self._section["tables"][-1]["rows"][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "li" and self._item is not None and self._section is not None:
            self._section["legend"][self._item[0]] = "".join(self._item[1]).strip()
            self._item = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._item is not None:
            self._item[1].append(data)


def test_the_page_has_babilongs_task_by_length_tables_with_the_scorers_values(tmp_path):
    samples = load_benchmark("babilong", BABILONG)
    llm = ScriptedChatModel(reply_fn=lambda prompt: "bathroom")
    config = RunConfig(benchmark="babilong", strategies=("full_context", "rag"), llm_cache=False)
    run_experiment(config, tmp_path, llm=llm, samples=samples, show_progress=False)
    result = build_report(tmp_path, samples=samples, plots=False)
    page = Page(Path(result["html"]).read_text(encoding="utf-8"))
    tables = page.sections["by-task-length"]["tables"]
    assert [t["strategy"] for t in tables] == ["full_context", "rag"]
    scores = json.loads((tmp_path / "report" / "scores.json").read_text())
    for table in tables:
        tasks = scores[table["strategy"]]["tasks"]
        lengths = list(scores[table["strategy"]]["lengths"])
        assert table["rows"][0] == ["task", *lengths]
        shown = {
            row[0]: [None if v == "-" else float(v) for v in row[1:]] for row in table["rows"][1:]
        }
        assert shown.pop("avg (qa1-qa5)") == [None] * len(lengths)  # the official avg needs qa1-qa5
        assert shown == {t: [tasks[t].get(n) for n in lengths] for t in tasks}


def _one_corpus_samples() -> list[Sample]:
    corpus = Corpus.from_texts(
        ["The vault code is 7421. " + "Parking rules apply. " * 30, "The lighthouse is red. " * 20]
    )
    asked = [("What is the vault code?", "7421"), ("What colour is the lighthouse?", "red")]
    return [
        Sample(
            sample_id=f"q{i}",
            benchmark="synth",
            dataset="finance",
            corpus=corpus,
            question=Question(text=q),
            answers=(a,),
        )
        for i, (q, a) in enumerate(asked)
    ]


def test_the_page_has_the_cost_per_context_with_a_legend_and_a_usd_plot_when_priced(tmp_path):
    samples = _one_corpus_samples()
    llm = ScriptedChatModel(reply_fn=lambda prompt: "The answer is: 7421")
    config = RunConfig(benchmark="synth", strategies=("rag", "full_context"), llm_cache=False)
    run_experiment(config, tmp_path, llm=llm, samples=samples, show_progress=False)
    prices = {"ScriptedChatModel": {"prompt": 1.0, "completion": 2.0}}
    result = build_report(tmp_path, samples=samples, prices=prices)
    report = tmp_path / "report"
    page = Page(Path(result["html"]).read_text(encoding="utf-8"))
    with open(report / "per_context.csv", encoding="utf-8") as f:
        written = list(csv.reader(f))
    section = page.sections["per-context"]
    (table,) = section["tables"]
    assert table["rows"][0] == written[0]  # the same columns and values as per_context.csv
    assert [[r[0], *map(float, r[1:])] for r in table["rows"][1:]] == [
        [r[0], *map(float, r[1:])] for r in written[1:]
    ]
    assert set(section["legend"]) == set(written[0]) and all(section["legend"].values())
    assert section["legend"] == {c: f"{c}: {COLUMNS[c]}" for c in written[0]}
    markdown = (report / "per_context.md").read_text()
    assert all(f"- `{c}`: {COLUMNS[c]}" in markdown for c in written[0])
    assert USD_PLOT in page.sections["plots"]["images"]
    assert (report / "accuracy_vs_usd.png").stat().st_size > 0

    unpriced = build_report(tmp_path, samples=samples)  # no price for a scripted model: no USD plot
    assert (
        USD_PLOT
        not in Page(Path(unpriced["html"]).read_text(encoding="utf-8")).sections["plots"]["images"]
    )
    assert not (report / "accuracy_vs_usd.png").exists()
