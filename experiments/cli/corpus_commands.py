"""The ``longctx`` commands on one corpus: answer a question (``answer``) and build its index
(``index``).

Each ``cmd_*`` runs one parsed command line and returns its exit status (see
:mod:`longctx.experiments.cli.commands`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from longctx import STRATEGIES, Corpus, Question, answer, index_for, make_chat_model
from longctx.agents.run_plan import announce_plan, plan_for
from longctx.experiments.cli.options import budget_from_args, parse_options, retrieval_overrides
from longctx.experiments.planning.prices import load_prices, price_for
from longctx.graphs.calls.llm import model_id
from longctx.graphs.plugin.strategy_registry import one_answer_strategy
from longctx.retrieval.ray_support import require_ray


def cmd_answer(args: argparse.Namespace) -> int:
    """Run one question and print answer, evidence titles and usage."""
    choices = {chr(ord("A") + i): c for i, c in enumerate(args.choices or [])} or None
    question = Question(text=args.question, choices=choices, instruction=args.instruction)
    spec = STRATEGIES.get(one_answer_strategy(args.strategy))
    overrides = {
        "top_k": args.top_k,
        "max_new_tokens": args.max_new_tokens,
        **(retrieval_overrides(args) if spec.uses_index else {}),
    }
    overrides = {k: v for k, v in overrides.items() if v is not None}
    options = parse_options(
        [o if "." in o.partition("=")[0] else f"{args.strategy}.{o}" for o in args.option]
    )
    wrong = sorted(set(options) - {args.strategy})
    if wrong:
        raise ValueError(f"--option names {wrong} but the strategy is {args.strategy!r}")
    overrides.update(options.get(args.strategy, {}))
    if args.ray is not None:
        if spec.ray_stage is None:
            staged = [n for n in STRATEGIES.available() if STRATEGIES.get(n).ray_stage is not None]
            raise ValueError(
                "--ray on 'answer' runs a strategy's own stage on Ray (--strategy "
                f"{' or '.join(staged) or '<one with a Ray stage>'}), "
                f"and {args.strategy!r} has none; for an index use 'longctx index --ray', for "
                "many questions 'longctx run --ray'"
            )
        require_ray()  # the install hint now, not after the plan call
        overrides.update(spec.ray_stage.options(args.ray or None))
    cfg = spec.make_config(
        args.preset, **overrides
    )  # bad options and a bad model fail before the corpus is read
    budget, llm = budget_from_args(args, make_chat_model(args.llm), [dataclasses.asdict(cfg)])
    corpus = Corpus.from_path(args.corpus, show_progress=True, duplicates=_duplicates(args))
    plans, speed = plan_for(
        {args.strategy: cfg}, [(corpus.num_tokens, len(corpus), 1)], llm, calibrate=True
    )
    if not announce_plan(plans, speed, model_id(llm), yes=args.yes):
        print("Not started.", file=sys.stderr)
        return 1
    result = answer(
        corpus,
        question,
        strategy=args.strategy,
        llm=llm,
        preset=args.preset,
        cache_dir=args.cache_dir,
        show_progress=True,
        budget=budget,
        **overrides,
    )
    if result.stopped:
        print(
            f"Stopped: the run reached its {result.stopped} "
            f"({budget.describe() if budget else ''}) after {result.usage.llm_calls} call(s); "
            "what it did is below (a larger budget resumes a checkpointed run)",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        return 0
    u = result.usage
    print(f"Answer: {result.answer}")
    if result.evidence:
        print("Evidence:")
        for i, e in enumerate(
            result.evidence
        ):  # structured evidence is a table cell: no chunk, no score
            where = ", ".join(
                ([f"chunk {e.chunk_id}"] if e.chunk_id is not None else [])
                + ([f"score {e.score:.3f}"] if e.score is not None else [])
            )
            print(
                f"  [{(i if e.rank is None else e.rank) + 1}] {e.title}"
                + (f" ({where})" if where else "")
                + ("" if e.score is not None else f": {e.text[:200]}")
            )
    earlier = (
        f"; the resumed run made {u.earlier_llm_calls} more in earlier calls"
        if u.earlier_llm_calls
        else ""
    )
    cached = (
        f" ({u.cached_prompt_tokens} of the prompt tokens read from the server's prompt cache)"
        if u.cached_prompt_tokens
        else ""
    )
    reranks = (
        f", {u.rerank_calls} rerank call(s) of {u.rerank_tokens} tokens" if u.rerank_calls else ""
    )
    print(
        f"Usage: {u.llm_calls} LLM call(s), {u.prompt_tokens} prompt + {u.completion_tokens} "
        "completion tokens"
        f"{' (estimated)' if u.estimated else ''}{cached}{reranks}, {u.seconds:.1f}s "
        f"({u.index_seconds:.1f}s indexing){earlier}"
    )
    price = price_for(model_id(llm), load_prices(args.prices) if args.prices else None)
    if price is not None and price.source != "local":
        usd = price.cost(u.prompt_tokens, u.completion_tokens, u.cached_prompt_tokens)
        print(
            f"Cost: ${usd:,.6f} at {price.key!r} ({price.source} price, USD per 1M tokens: "
            f"{price.prompt:g} prompt, {price.completion:g} completion)"
        )
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    """Build (or find) the cached index of a corpus and print where it is."""
    spec = STRATEGIES.get(one_answer_strategy(args.strategy))
    if not spec.uses_index:  # a plug-in is offered by its entry point's name before it is loaded
        raise ValueError(
            f"Strategy {args.strategy!r} uses no index; 'longctx index' builds one for "
            f"{', '.join(s for s in STRATEGIES.available() if STRATEGIES.get(s).uses_index)}"
        )
    corpus = Corpus.from_path(args.path, show_progress=True, duplicates=_duplicates(args))
    cfg = spec.make_config(**retrieval_overrides(args))
    if args.ray is not None:
        from longctx.retrieval.ray_index import build_index_ray

        index = build_index_ray(
            corpus,
            cfg.retriever,
            chunking=cfg.chunking(),
            cache_dir=args.cache_dir,
            address=args.ray or None,
            workers=args.ray_workers,
            show_progress=True,
            **dict(cfg.retriever_options),
        )
    else:
        index = index_for(corpus, cfg, cache_dir=args.cache_dir, show_progress=True)
    print(
        f"{len(corpus)} documents, {corpus.num_tokens} tokens -> {len(index)} chunks, "
        f"{index.retriever.name} index at {index.path}"
    )
    return 0


def _duplicates(args: argparse.Namespace) -> str:
    """``keep`` with ``--keep-duplicates``, else ``drop`` (:mod:`longctx.retrieval.duplicates`)."""
    return "keep" if getattr(args, "keep_duplicates", False) else "drop"
