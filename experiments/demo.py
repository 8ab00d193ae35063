"""``longctx demo``: a small synthetic corpus, every strategy on the embedded model, one comparison.

It exercises the whole pipeline offline (generator, retrieval, strategies, runner,
official-style scoring, report and plots) in a few minutes on 2 CPU cores. The embedded
135M model is far too small to score well: the point is the comparison machinery, the
costs, and a table and plots to read; point ``--llm`` at a real model for real numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from experiments.benchmarks import load_benchmark
from experiments.report import build_report
from experiments.runner import RunConfig, run_experiment
from experiments.synth import SynthConfig, generate

#: A demo-scale window: the embedded model prefills ~100-250 tokens/s on 2 cores, so its
#: full 8k window would make full_context alone take minutes per question.
DEMO_WINDOW = 4096
_MEMAGENT = {"chunk_tokens": 2500, "max_new_tokens": 96, "temperature": 0.0}
#: Every strategy, with options that keep a 2-core run to a few minutes on the 135M model.
DEMO_STRATEGIES: dict[str, dict[str, Any]] = {
    "rag": {"top_k": 3},
    "full_context": {"context_window": DEMO_WINDOW, "max_new_tokens": 64},
    "memagent": _MEMAGENT,
    "self_route": {"top_k": 3, "context_window": DEMO_WINDOW, "fallback": "memagent", "fallback_options": _MEMAGENT},
    "self_ask": {"top_k": 3, "max_iterations": 3},  # generator calls: a follow-up, its answer, the final answer
    "pai": {"judge_mode": "prefilter", "top_k": 4},
    "pai_minus": {"judge_mode": "prefilter", "top_k": 4},
}


def run_demo(
    out: str | Path,
    *,
    llm: str | None = None,
    questions: int = 2,
    tokens: int = 13_500,
    seed: int = 0,
    strategies: dict[str, dict[str, Any]] | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Generate (or reuse) a corpus under ``out``, run the strategies, write the report.

    Rerunning into the same folder resumes: finished answers are not asked again.
    """
    out = Path(out)
    corpus_dir = out / "corpus"
    if not (corpus_dir / "questions.jsonl").exists():
        cfg = SynthConfig(
            domain="finance", target_tokens=tokens, seed=seed, num_questions=max(questions, 4), doc_tokens=1500, report_years=(2023, 2024)
        )  # the generator's smallest shape: 4 companies x 2 annual reports + 1 noise document
        generate(cfg, corpus_dir)
    samples = load_benchmark("synth", corpus_dir)[:questions]
    chosen = strategies or DEMO_STRATEGIES
    config = RunConfig(
        benchmark="synth",
        strategies=tuple(chosen),
        llm=llm,
        data_path=str(corpus_dir),
        limit=questions,
        concurrency=1,  # the embedded model answers one call at a time anyway
        strategy_options={k: v for k, v in chosen.items() if v},
    )
    run_experiment(config, out / "run", samples=samples, show_progress=show_progress)
    return build_report(out / "run", samples=samples)
