"""``longctx demo``: compare strategies on five short annual reports, offline, in a few minutes.

The demo is the own-corpus path a user walks with their documents (``longctx run
--corpus examples/corpus --questions examples/questions.csv``): single-fact lookups the
embedded 135M model can read in a short context, next to an aggregation question across
all five reports and one with no gold answer (reported unscored). It runs on the embedded
model at demo scale and prints the table with an honest reading of it; point ``--llm``
at a real model for real numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from longctx.agents.chat_models import make_chat_model
from longctx.agents.embedded_chat import EmbeddedChatModel
from longctx.agents.run_plan import announce_plan
from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.benchmarks.own import read_questions
from longctx.experiments.planning.plan import plan_experiment
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import RunConfig, run_experiment
from longctx.graphs.calls.llm import model_id
from longctx.graphs.plugin.registry import STRATEGIES
from longctx.retrieval import Corpus

#: The corpus and questions shipped with the repository.
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEMO_CORPUS = EXAMPLES / "corpus"
DEMO_QUESTIONS = EXAMPLES / "questions.csv"


def demo_strategies() -> dict[str, dict[str, Any]]:
    """Every strategy the demo offers, with its options at demo scale (small chunks and few calls):
    those whose registry entry declares ``presentation.demo_options``."""
    specs = (STRATEGIES.get(name) for name in STRATEGIES.available())
    return {
        s.name: dict(s.presentation.demo_options)
        for s in specs
        if s.presentation.demo_options is not None
    }


def default_demo() -> tuple[str, ...]:
    """The strategies the demo runs without ``--strategies``: those that finish in minutes on
    2 cores (``presentation.demo_default``); ``--strategies all`` adds the others (several
    calls each)."""
    return tuple(
        name for name in STRATEGIES.available() if STRATEGIES.get(name).presentation.demo_default
    )


#: Questions asked by default: two lookups, the aggregation, and the one without a gold answer.
DEFAULT_QUESTIONS = 4


def run_demo(
    out: str | Path,
    *,
    llm: str | BaseChatModel | None = None,
    questions: int | None = None,
    strategies: dict[str, dict[str, Any]] | None = None,
    show_progress: bool = True,
    say: Any = print,
    yes: bool = False,
) -> dict[str, Any] | None:
    """Run the shipped questions over the shipped corpus with every strategy and write the report.

    It first says what it will do and the plan (calls, tokens, minutes at the model's measured
    speed); a plan over :data:`~agents.run_plan.CONFIRM_MINUTES` asks on a terminal whether to go on
    (``yes`` skips; ``None`` is returned when declined). Rerunning into the same folder resumes:
    finished answers are not asked again.
    """
    chosen = strategies or {name: demo_strategies()[name] for name in default_demo()}
    n = min(questions or DEFAULT_QUESTIONS, len(read_questions(DEMO_QUESTIONS)))
    corpus = Corpus.from_path(DEMO_CORPUS)
    config = RunConfig.for_corpus(
        DEMO_CORPUS,
        DEMO_QUESTIONS,
        tuple(chosen),
        llm=llm if isinstance(llm, str) else None,
        limit=n,
        concurrency=1,
        strategy_options={k: v for k, v in chosen.items() if v},
    )
    samples = load_benchmark("own", DEMO_QUESTIONS, corpus=DEMO_CORPUS)[:n]
    chat = make_chat_model(llm)
    plans, speed = plan_experiment(config, samples, chat, Path(out) / "run")
    name = "the embedded SmolLM2-135M" if isinstance(chat, EmbeddedChatModel) else model_id(chat)
    say(
        f"Demo: {len(chosen)} strategies ({', '.join(chosen)}) x {n} questions over {len(corpus)} "
        f"annual reports ({corpus.num_tokens:,} tokens) on {name}. Results go to {out}."
    )
    if not announce_plan(plans, speed, name, yes=yes, out=_Said(say)):
        return None
    run_experiment(
        config, Path(out) / "run", llm=chat, samples=samples, show_progress=show_progress
    )
    return build_report(Path(out) / "run", samples=samples)


class _Said:
    """A file-like object that hands each printed message to ``say`` (the demo's output)."""

    def __init__(self, say: Any) -> None:
        self.say = say

    def write(self, text: str) -> None:
        if text.strip():
            self.say(text.rstrip("\n"))

    def flush(self) -> None:
        return None


READING = (
    "How to read this: the embedded model is SmolLM2-135M, chosen because it ships inside a "
    "package\n"
    "and runs anywhere offline. It can copy a fact out of a short context (the lookups), and it\n"
    "cannot compare numbers across five reports (the aggregation question), whatever the "
    "strategy.\n"
    "So the table shows what each strategy sends and costs (calls, tokens, seconds) and that the\n"
    "strategies reach the facts differently, not which strategy is best. For that, point --llm at\n"
    "a real model, e.g. OPENAI_BASE_URL=http://127.0.0.1:8000/v1 longctx demo --llm "
    "openai:Qwen/Qwen2.5-7B-Instruct,\n"
    "and use your own documents: longctx run --corpus DIR --questions FILE --strategies ... "
    "--out DIR."
)
