"""RLM at scale on an in-process scripted model with a fixed latency: the root chunks the corpus
into ~100K-character pieces (the official prompt's advice) and sends them through
``llm_query_batched`` (or, ``--depth 2``, ``rlm_query_batched``: a child RLM per piece, each
with its own REPL and one ``llm_query``), then answers.

    python -m benchmarks.bench_rlm [--tokens 1000000 10000000] [--latency 0.05] [--depth 1]

Prints per size (nothing is asserted): calls by depth (depth 1 with ``--depth 2``: the
children, one turn each), prompt tokens, wall seconds against the ideal (root turns x latency +
sub-call waves / concurrency x latency), and peak RSS; the plan (which counts the corpus's tokens,
cached for the run after it) apart; first a 20K-token warm-up run. ``repl`` is
``unsafe_inprocess`` unless ``--repl sandbox``.

Measured (2 shared cores, 50 ms latency, depth 1): 1M tokens (2.8M chars): 32 calls (3 root, 29
sub-calls), 0.35 s against 0.25 s ideal, 161 MB peak RSS; 10M tokens (28.5M chars): 288 calls
(3 + 285), 1.46 s against 1.05 s, 296 MB (the plan's corpus count 6.6 s apart). Depth 2 at 1M:
61 calls (3 root, 29 child turns, 29 child llm_query), 1.07 s against 0.95 s. In the jailed
REPL (``--repl sandbox``, h48-sandbox's jail): 0.59 s at 1M, 2.38 s at 10M (the 28.5M-character
context sent to the worker once), 301 MB host peak RSS.
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from benchmarks.bench_retrieval import peak_rss_mb
from benchmarks.synthetic_text import generate_corpus
from longctx import answer, estimate

PIECE_CHARS = 100_000

ROOT_TURNS = [
    "```repl\nprint(type(context), len(context), sum(len(d) for d in context))\n```",
    "```repl\n"
    "text = '\\n'.join(context)\n"
    "pieces = [text[i:i + {piece}] for i in range(0, len(text), {piece})]\n"
    "outs = {fn}(['Find the fact in: ' + p for p in pieces])\n"
    "print(len(outs), outs[:2])\n```",
    "```repl\nanswer['content'] = 'found ' + str(len(outs))\nanswer['ready'] = True\n```",
]
CHILD_TURNS = [
    "```repl\nr = llm_query('Extract: ' + context[:2000])\n"
    "answer['content'] = r\nanswer['ready'] = True\n```",
]


class LatencyModel(BaseChatModel):
    """Scripted root and child turns, every other call a one-line reply, each after ``latency``
    seconds; usage reported as characters / 4."""

    latency: float = 0.05
    depth: int = 1

    @property
    def _llm_type(self) -> str:
        return "latency-scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        time.sleep(self.latency)
        contents = [str(m.content) for m in messages]
        turn = sum(1 for m in messages if m.type == "ai")
        if len(contents) > 1 and contents[1].startswith("Answer the following:"):
            fn = "llm_query_batched" if self.depth == 1 else "rlm_query_batched"
            text = ROOT_TURNS[min(turn, 2)].replace("{piece}", str(PIECE_CHARS))
            text = text.replace("{fn}", fn)
        elif contents[0].startswith("You are a Recursive Language Model"):
            text = CHILD_TURNS[0]
        else:
            text = "fact 42"
        prompt = sum(len(c) for c in contents) // 4
        message = AIMessage(content=text)
        message.usage_metadata = {
            "input_tokens": prompt,
            "output_tokens": len(text) // 4,
            "total_tokens": prompt + len(text) // 4,
        }
        return ChatResult(generations=[ChatGeneration(message=message)])


def run(tokens: int, args: argparse.Namespace) -> None:
    """One size: generate, answer, print the figures."""
    t = time.perf_counter()
    corpus = generate_corpus(tokens)
    chars = sum(len(d.text) + len(d.title) + 1 for d in corpus.documents)
    made = time.perf_counter() - t
    llm = LatencyModel(latency=args.latency, depth=args.depth)
    t = time.perf_counter()
    estimate(corpus, "Which fact?", strategy="rlm", llm=llm)  # counts the corpus's tokens once
    planned = time.perf_counter() - t
    t = time.perf_counter()
    result = answer(
        corpus,
        "Which fact?",
        strategy="rlm",
        llm=llm,
        repl=args.repl,
        max_depth=args.depth,
        max_sub_calls_per_turn=10_000,
        show_progress=False,
    )
    wall = time.perf_counter() - t
    turns = [s for s in result.steps if s["node"] == "turn"]
    by_depth: Counter[int] = Counter({0: len(turns)})
    for s in turns:
        for c in s["sub_calls"]:
            by_depth[c["depth"]] += 1
    pieces = math.ceil(chars / PIECE_CHARS)
    if args.depth == 1:
        ideal = (len(turns) + math.ceil(pieces / 16)) * args.latency
    else:  # each child: a turn and an llm_query, 4 children at once
        ideal = (len(turns) + math.ceil(pieces / 4) * 2) * args.latency
    print(
        f"{tokens:>11,} tokens ({chars / 1e6:.1f}M chars, {made:.1f} s to make, "
        f"plan {planned:.1f} s): "
        f"calls {result.usage.llm_calls:,} ({dict(sorted(by_depth.items()))} by depth), "
        f"prompt tokens {result.usage.prompt_tokens:,}, wall {wall:.2f} s vs ideal {ideal:.2f} s, "
        f"peak RSS {peak_rss_mb():,.0f} MB; answer {result.answer!r}"
    )


def main() -> None:
    """Parse the sizes and run each."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tokens", type=int, nargs="+", default=[1_000_000, 10_000_000])
    p.add_argument("--latency", type=float, default=0.05)
    p.add_argument("--depth", type=int, default=1, choices=[1, 2])
    p.add_argument("--repl", default="unsafe_inprocess", choices=["unsafe_inprocess", "sandbox"])
    args = p.parse_args()
    warm = argparse.Namespace(**{**vars(args), "latency": 0.0})
    run(20_000, warm)  # imports, graph compile, tokenizer load: not the run's
    for tokens in args.tokens:
        run(tokens, args)


if __name__ == "__main__":
    main()
