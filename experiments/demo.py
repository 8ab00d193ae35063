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

from experiments.benchmarks import load_benchmark
from experiments.benchmarks.own import read_questions
from experiments.report import build_report
from experiments.runner import RunConfig, run_experiment
from retrieval import Corpus

#: The corpus and questions shipped with the repository.
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DEMO_CORPUS = EXAMPLES / "corpus"
DEMO_QUESTIONS = EXAMPLES / "questions.csv"

#: Every strategy, at demo scale: small chunks and few calls. The default run compares the four
#: that finish in minutes on 2 cores; ``--strategies all`` adds Self-Ask, PAI and structured (several calls each).
DEMO_STRATEGIES: dict[str, dict[str, Any]] = {
    "rag": {"chunk_size": 60, "top_k": 3},
    "full_context": {"max_new_tokens": 32},
    "memagent": {"chunk_tokens": 500, "max_new_tokens": 96, "temperature": 0.0},
    "self_route": {"chunk_size": 60, "top_k": 3},
    "self_ask": {"chunk_size": 60, "top_k": 3, "max_iterations": 2},
    "pai": {"judge_mode": "prefilter", "top_k": 2, "max_items": 2, "chunk_unit": "words", "chunk_size": 60},
    # one retry per call and short budgets; records extracted for one question's table serve the next that reuses it
    "structured": {"retries": 1, "sql_retries": 1, "plan_max_tokens": 512, "extract_max_tokens": 768, "answer_max_tokens": 32},
}
DEFAULT_DEMO = ("rag", "full_context", "memagent", "self_route")
#: Questions asked by default: two lookups, the aggregation, and the one without a gold answer.
DEFAULT_QUESTIONS = 4

#: Measured on 2 quiet cores (SmolLM2-135M, llama.cpp): seconds per call of about 500 prompt tokens.
SECONDS_PER_CALL = 1.5
#: Typical calls per question at demo scale (memagent: 2 chunks + final; pai: decompose, judges, sub-answers, summary;
#: structured: plan, one extraction per report and a retry for most, SQL and its retry, answer).
CALLS_PER_QUESTION = {"rag": 1, "full_context": 1, "memagent": 3, "self_route": 1.5, "self_ask": 2, "pai": 7, "pai_minus": 7, "structured": 14}


def plan(strategies: dict[str, dict[str, Any]], questions: int) -> tuple[int, float]:
    """(model calls, seconds) the demo is expected to take, printed before it starts."""
    calls = sum(CALLS_PER_QUESTION.get(name, 3) for name in strategies) * questions
    return round(calls), calls * SECONDS_PER_CALL + 20  # + loading the model and indexing


def run_demo(
    out: str | Path,
    *,
    llm: str | BaseChatModel | None = None,
    questions: int | None = None,
    strategies: dict[str, dict[str, Any]] | None = None,
    show_progress: bool = True,
    say: Any = print,
) -> dict[str, Any]:
    """Run the shipped questions over the shipped corpus with every strategy and write the report.

    Rerunning into the same folder resumes: finished answers are not asked again.
    """
    chosen = strategies or {name: DEMO_STRATEGIES[name] for name in DEFAULT_DEMO}
    n = min(questions or DEFAULT_QUESTIONS, len(read_questions(DEMO_QUESTIONS)))
    corpus = Corpus.from_path(DEMO_CORPUS)
    calls, seconds = plan(chosen, n)
    say(
        f"Demo: {len(chosen)} strategies ({', '.join(chosen)}) x {n} questions over {len(corpus)} annual reports "
        f"({corpus.num_tokens:,} tokens) on {llm if isinstance(llm, str) else 'the embedded SmolLM2-135M' if llm is None else type(llm).__name__}: "
        f"about {calls} model calls, "
        f"roughly {seconds / 60:.0f}-{seconds / 60 * 1.6:.0f} minutes on 2 cores. Results go to {out}."
    )
    config = RunConfig.for_corpus(
        DEMO_CORPUS, DEMO_QUESTIONS, tuple(chosen), llm=llm if isinstance(llm, str) else None, limit=n, concurrency=1, strategy_options={k: v for k, v in chosen.items() if v}
    )
    samples = load_benchmark("own", DEMO_QUESTIONS, corpus=DEMO_CORPUS)[:n]
    run_experiment(config, Path(out) / "run", llm=None if isinstance(llm, str) else llm, samples=samples, show_progress=show_progress)
    return build_report(Path(out) / "run", samples=samples)


READING = """How to read this: the embedded model is SmolLM2-135M, chosen because it ships inside a package
and runs anywhere offline. It can copy a fact out of a short context (the lookups), and it
cannot compare numbers across five reports (the aggregation question), whatever the strategy.
So the table shows what each strategy sends and costs (calls, tokens, seconds) and that the
strategies reach the facts differently, not which strategy is best. For that, point --llm at
a real model, e.g. OPENAI_BASE_URL=http://127.0.0.1:8000/v1 longctx demo --llm openai:Qwen/Qwen2.5-7B-Instruct,
and use your own documents: longctx run --corpus DIR --questions FILE --strategies ... --out DIR."""
