"""Every strategy end to end over a 10M-token synthetic corpus, against a local stub.

    python -m benchmarks.bench_scale --tokens 10M --questions 8 --latency 0 [--latency 0.05]
        [--strategies rag memagent ...]
    # embedding time, measured on 512 chunks, extrapolated
    python -m benchmarks.bench_scale --tokens 10M --dense-probe 512

Generates the tier once under ``--root`` (finance, seed 0, a needle at depth 0.5, as
``bench_ceilings``; an existing folder is reused) and takes its first ``--questions``
questions. For each strategy, in its own subprocess (so peak RSS is per strategy):

1. **index** (strategies with an index, once per strategy): the strategy's default
   index (BM25) built cold into ``--root``/index/<strategy>; build seconds, size on disk
   and the build's peak RSS.
2. **run** (per stub latency): the corpus and questions loaded, the index loaded from that cache,
   the process warmed up (the model's tokenizer resolved, one call made, a full garbage collection:
   one-time costs of about half a second, in ``load s``), then ``answer_many`` over all questions
   with ``concurrency=--concurrency`` (MemAgent: every question in one batched pass; PAI:
   ``judge_mode="auto"``, which picks the prefilter at 10M; full_context: truncated to the 128K
   window; structured: the finance table as a fixed schema, as ``bench_structured``), checkpoints
   and caches in a fresh run folder ``--root``/run-<latency>/<strategy>. Before ``answer_many``,
   full_context is *prepared* (``longctx.graphs.full_context.prepare_corpus``: the documents
   formatted into its prompt, the corpus fingerprinted, the kept head and the context's end
   tokenized; once per corpus per process), timed apart as ``prepare s`` in the index column, as an
   index build is (``--no-prepare``: its first question does it instead).

Printed per strategy and latency: questions answered, calls (the stub's request count), prompt
tokens, wall time of ``answer_many``, the overhead per call
``(wall - latency x calls / concurrency) / calls``, what a bare ``ChatOpenAI`` call of the run's
mean prompt size costs by the same formula (HTTP, SDK, the stub's token counting), its prompt the
corpus's own text (the figure with a prompt of ``"word "`` repeated, used before, is shown beside
it: at 128K tokens it is ~12 ms cheaper, the stub counting and the client encoding shorter, simpler
text), our own overhead (the difference; with ``--repeat`` also for a second batch in the same
process), the process's peak RSS, the index on disk, the run folder on disk (largest seen while
running, sampled twice a second, and after the run) and, apart, its checkpoint databases. Nothing is
asserted; the Done-when bars of issue 16 (RSS < 4 GiB, own overhead <= 15 ms per call at 0 ms,
MemAgent's checkpoints < 200 MB) are marked in the last column. Results: docs/scale.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.bench_ceilings import tier_folder
from benchmarks.bench_structured import finance_schema
from benchmarks.stub_server import stub_server
from longctx import answer_many, make_chat_model
from longctx.experiments.synth import load_samples
from longctx.experiments.synth.samples import DOCS_DIR
from longctx.graphs import STRATEGIES
from longctx.graphs.calls.llm import tokenizer_for
from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.rag.config import RagConfig
from longctx.retrieval import chunk_corpus
from longctx.retrieval.contract import Corpus
from longctx.retrieval.embedders import SentenceTransformerEmbedder

#: Every strategy, in the order they are run.
ALL_STRATEGIES = (
    "rag",
    "full_context",
    "self_route",
    "self_ask",
    "pai",
    "pai_minus",
    "memagent",
    "structured",
)
CHECKPOINTS_FILE = (
    "checkpoints.sqlite"  # memory.CHECKPOINTS_FILE, matched with its -wal and -shm files
)
RSS_BAR_MIB = 4096
OVERHEAD_BAR_MS = 15.0
CHECKPOINT_BAR_MB = 200.0


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def disk_bytes(path: Path, prefix: str = "") -> int:
    """Bytes allocated on disk under ``path`` by files named ``prefix...`` (files that vanish while
    walking are skipped)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            if not name.startswith(prefix):
                continue
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


class DiskSampler:
    """The largest size of a folder seen while a block runs, sampled every ``interval`` seconds."""

    def __init__(self, path: Path, interval: float = 0.5) -> None:
        self.path, self.interval, self.peak, self.checkpoints_peak = path, interval, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        """Note the folder's size now, and that of its checkpoint databases (with their WAL)."""
        self.peak = max(self.peak, disk_bytes(self.path))
        self.checkpoints_peak = max(self.checkpoints_peak, disk_bytes(self.path, CHECKPOINTS_FILE))

    def __enter__(self) -> DiskSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


def strategy_options(name: str) -> dict[str, Any]:
    """Config options a strategy needs against the stub (structured: a fixed schema, since the
    stub cannot plan one); every other strategy runs with its defaults."""
    if name == "structured":
        return {"schema": finance_schema()}
    return {}


def stub_requests(url: str) -> int:
    """Chat requests the stub has answered so far."""
    with urllib.request.urlopen(f"{url}/stats", timeout=10) as r:
        return json.loads(r.read())["chat_requests"]


# ----------------------------------------------------------------------------- worker side


def worker_index(args: argparse.Namespace) -> dict[str, Any]:
    """Build the strategy's default index cold into its own cache folder."""

    corpus = Corpus.from_path(Path(args.data) / DOCS_DIR, duplicates="keep")
    cfg = STRATEGIES.get(args.strategy).make_config(None, **strategy_options(args.strategy))
    folder = Path(args.index_dir)
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    index = RetrievalService(settings=cfg, cache_dir=folder).build_index(corpus)
    seconds = time.perf_counter() - started
    return {
        "chunks": len(index.chunks),
        "build_s": seconds,
        "index_bytes": disk_bytes(folder),
        "rss_mib": peak_rss_mib(),
        "retriever": cfg.retriever,
        "chunking": f"{cfg.chunk_size} {cfg.chunk_unit}",
    }


def worker_run(args: argparse.Namespace) -> dict[str, Any]:
    """Load the corpus, questions and index; time ``answer_many`` over all questions."""

    os.environ["OPENAI_BASE_URL"] = args.url
    started = time.perf_counter()
    samples = load_samples(args.data)[: args.questions]
    corpus, questions = samples[0].corpus, [s.question for s in samples]
    spec = STRATEGIES.get(args.strategy)
    options = strategy_options(args.strategy)
    index = None
    if spec.uses_index:
        index = RetrievalService(
            settings=spec.make_config(None, **options), cache_dir=args.index_dir
        ).build_index(corpus)
    llm = make_chat_model("openai:stub", max_retries=0)
    # one-time per process, not per call: resolve the model's tokenizer (a probe of the
    # server, loading cl100k), open the connection, and collect the garbage of loading (the
    # process's first full collection, ~0.1 s over every object the libraries, corpus and
    # index made, fell in the first batch: 12 ms a call of full_context's 8)
    tokenizer_for(llm).count("warm up")
    llm.invoke("warm up", max_tokens=1)
    gc.collect()
    load_s = time.perf_counter() - started
    prepare_s = (
        None
        if args.no_prepare
        else prepare_strategy(args.strategy, corpus, questions, llm, options)
    )
    run_dir = Path(args.run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    before = stub_requests(args.url)
    with DiskSampler(run_dir) as disk:
        t = time.perf_counter()
        answers = answer_many(
            corpus,
            questions,
            strategy=args.strategy,
            llm=llm,
            cache_dir=run_dir,
            index=index,
            concurrency=args.concurrency,
            show_progress=False,
            **options,
        )
        wall = time.perf_counter() - t
    calls = stub_requests(args.url) - before
    warm = {}
    if (
        args.repeat
    ):  # the same batch again in this process, in a fresh run folder: one-time costs are paid
        shutil.rmtree(f"{run_dir}-again", ignore_errors=True)
        again_before = stub_requests(args.url)
        t = time.perf_counter()
        answer_many(
            corpus,
            questions,
            strategy=args.strategy,
            llm=llm,
            cache_dir=f"{run_dir}-again",
            index=index,
            concurrency=args.concurrency,
            show_progress=False,
            **options,
        )
        warm = {
            "again_wall_s": time.perf_counter() - t,
            "again_calls": stub_requests(args.url) - again_before,
        }
        shutil.rmtree(f"{run_dir}-again", ignore_errors=True)
    prompt_tokens = sum(a.usage.prompt_tokens for a in answers)
    mean_tokens, bare_n = prompt_tokens // max(calls, 1), min(calls, 64)
    bare_ms = bare_call_ms(
        llm, corpus_text(corpus, mean_tokens), bare_n, args.concurrency, args.worker_latency
    )
    bare_word_ms = bare_call_ms(
        llm, "word " * max(mean_tokens, 1), bare_n, args.concurrency, args.worker_latency
    )
    steps = [s for a in answers for s in a.steps]
    modes = sorted(
        {str(s["mode"]) for s in steps if s.get("node") == "plan_judging" and "mode" in s}
    )
    return {
        "answered": sum(a.usage.failed_calls == 0 for a in answers),
        "empty": sum(not a.answer.strip() for a in answers),
        "questions": len(answers),
        "calls": calls,
        "usage_calls": sum(a.usage.llm_calls for a in answers),
        "prompt_tokens": prompt_tokens,
        "bare_ms": bare_ms,
        "bare_word_ms": bare_word_ms,
        "corpus_tokens": corpus.num_tokens,
        "load_s": load_s,
        "prepare_s": prepare_s,
        "wall_s": wall,
        "rss_mib": peak_rss_mib(),
        "run_peak_bytes": disk.peak,
        "run_final_bytes": disk_bytes(run_dir),
        "checkpoints_peak_bytes": disk.checkpoints_peak,
        "checkpoints_final_bytes": disk_bytes(run_dir, CHECKPOINTS_FILE),
        "modes": modes,
        **warm,
    }


def prepare_strategy(
    name: str, corpus: Corpus, questions: list, llm: Any, options: dict[str, Any]
) -> float | None:
    """Seconds of the once-per-corpus work a strategy can do before its questions, like an index
    build (full_context: its prompt's shared part,
    :func:`longctx.graphs.full_context.prepare_corpus`); ``None`` for strategies with none."""
    if name != "full_context":
        return None
    from longctx.graphs.full_context import prepare_corpus

    started = time.perf_counter()
    prepare_corpus(corpus, questions, llm, STRATEGIES.get(name).make_config(None, **options))
    return time.perf_counter() - started


def corpus_text(corpus: Corpus, tokens: int) -> str:
    """The corpus's first ``tokens`` cl100k tokens of document text (documents joined by blank
    lines, repeated if the corpus is shorter): a bare prompt of the run's size in the kind of
    text the strategies send."""
    from longctx.retrieval.tokens import decode, encode

    tokens = max(tokens, 1)
    parts: list[str] = []
    chars = 0
    while chars < 8 * tokens:  # cl100k holds well under 8 characters a token of prose
        for doc in corpus.documents:
            parts.append(doc.text)
            chars += len(doc.text) + 2
            if chars >= 8 * tokens:
                break
    ids = encode("\n\n".join(parts))
    while len(ids) < tokens:
        ids += ids
    return decode(ids[:tokens])


def bare_call_ms(llm: Any, prompt_text: str, n: int, concurrency: int, latency: float) -> float:
    """What a call with ``prompt_text`` (the run's mean prompt size) costs outside our code
    (HTTP, the SDK, the stub's token counting): ``n`` bare ``invoke`` calls at the run's
    concurrency, per call, beyond the latency, by the same formula as the run's overhead."""
    from concurrent.futures import ThreadPoolExecutor

    from langchain_core.messages import HumanMessage

    if n == 0:
        return 0.0
    prompt = [HumanMessage(prompt_text)]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=min(concurrency, n)) as pool:
        list(pool.map(lambda _: llm.invoke(prompt, max_tokens=16), range(n)))
    return ((time.perf_counter() - started) - latency * n / min(concurrency, n)) / n * 1000


# ----------------------------------------------------------------------------- parent side


def run_worker(phase: str, strategy: str, args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    """One phase of one strategy in a fresh interpreter; its JSON result (or the error)."""
    out = Path(args.root) / f"result-{phase}-{strategy}.json"
    out.unlink(missing_ok=True)
    cmd = (
        [
            sys.executable,
            "-m",
            "benchmarks.bench_scale",
            "--worker",
            phase,
            "--strategy",
            strategy,
            "--result",
            str(out),
            "--root",
            args.root,
            "--questions",
            str(args.questions),
            "--concurrency",
            str(args.concurrency),
        ]
        + (["--repeat"] if args.repeat else [])
        + (["--no-prepare"] if args.no_prepare else [])
    )
    for key, value in extra.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {args.timeout} s"}
    if proc.returncode != 0 or not out.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {
            "error": f"exit {proc.returncode}: " + " | ".join(tail),
            "process_s": time.perf_counter() - started,
        }
    result = json.loads(out.read_text())
    result["process_s"] = time.perf_counter() - started
    return result


def mib(n: float) -> str:
    """Bytes as MiB with one decimal."""
    return f"{n / 2**20:,.1f}"


def format_row(
    name: str, latency: float, r: dict[str, Any], index: dict[str, Any] | None, concurrency: int
) -> tuple[str, list[str]]:
    """One table row and the Done-when bars it misses."""
    if "error" in r:
        return f"| {name} | {latency * 1000:.0f} | failed: {r['error']} |" + " |" * 12, [
            f"{name}: {r['error']}"
        ]
    calls = max(r["calls"], 1)
    overhead_ms = (r["wall_s"] - latency * r["calls"] / concurrency) / calls * 1000
    ours_ms = overhead_ms - r["bare_ms"]
    if "again_wall_s" in r:
        again = (r["again_wall_s"] - latency * r["again_calls"] / concurrency) / max(
            r["again_calls"], 1
        ) * 1000 - r["bare_ms"]
        ours = f"{ours_ms:.2f} / {again:.2f}"
    else:
        ours = f"{ours_ms:.2f}"
    misses = []
    if r["answered"] < r["questions"]:
        misses.append(f"{r['questions'] - r['answered']} unanswered")
    if r["rss_mib"] >= RSS_BAR_MIB:
        misses.append("RSS")
    if latency == 0 and ours_ms > OVERHEAD_BAR_MS:
        misses.append("overhead")
    if name == "memagent" and r["checkpoints_peak_bytes"] / 1e6 >= CHECKPOINT_BAR_MB:
        misses.append("checkpoints")
    idx = (
        "-"
        if not index
        else (
            f"{mib(index['index_bytes'])} ({index['chunks']:,} chunks, {index['build_s']:.0f} s)"
            if "error" not in index
            else "failed"
        )
    )
    if r.get("prepare_s") is not None:
        idx = f"prepare {r['prepare_s']:.2f} s"
    mode = f" ({', '.join(r['modes'])})" if r.get("modes") else ""
    empty = f" ({r['empty']} empty)" if r.get("empty") else ""
    bare = f"{r['bare_ms']:.2f}" + (
        f" (word {r['bare_word_ms']:.2f})" if "bare_word_ms" in r else ""
    )
    ckpt = (
        f"{r['checkpoints_peak_bytes'] / 1e6:,.1f} / {r['checkpoints_final_bytes'] / 1e6:,.1f}"
        if r["checkpoints_peak_bytes"]
        else "-"
    )
    row = (
        f"| {name}{mode} | {latency * 1000:.0f} | {r['answered']}/{r['questions']}{empty} | "
        f"{r['calls']:,} | {r['prompt_tokens']:,} | {r['load_s']:.1f} | {r['wall_s']:.1f} | "
        f"{overhead_ms:.2f} | {bare} | {ours} | {r['rss_mib']:,.0f} | {idx} | "
        f"{mib(r['run_peak_bytes'])} / {mib(r['run_final_bytes'])} | {ckpt} | "
        f"{'ok' if not misses else ', '.join(misses)} |"
    )
    return row, [f"{name} at {latency * 1000:.0f} ms: {m}" for m in misses]


def dense_probe(args: argparse.Namespace, folder: Path) -> None:
    """Embed ``--dense-probe`` chunks of RAG's chunking with the default dense embedder; extrapolate
    to the corpus."""

    corpus = Corpus.from_path(folder / DOCS_DIR, duplicates="keep")
    chunks = chunk_corpus(corpus, RagConfig(retriever="dense").chunking())
    step = max(1, len(chunks) // args.dense_probe)
    sample = [c.text for c in chunks[::step][: args.dense_probe]]
    embedder = SentenceTransformerEmbedder()
    embedder.embed_documents(sample[:32])  # load the model and warm up
    started = time.perf_counter()
    embedder.embed_documents(sample)
    secs = time.perf_counter() - started
    rate = len(sample) / secs
    print(
        f"dense probe: all-MiniLM-L6-v2 on CPU ({os.cpu_count()} cores), {len(sample)} of "
        f"{len(chunks):,} chunks (200 words) in {secs:.1f} s = {rate:.1f} chunks/s -> the whole "
        f"corpus in about {len(chunks) / rate / 60:.0f} min"
    )


def main() -> None:
    """Parse arguments; run as the parent (generate, then one subprocess per phase) or as
    a worker."""
    p = _parser()
    args = p.parse_args()

    if args.worker:
        result = (worker_index if args.worker == "index" else worker_run)(args)
        Path(args.result).write_text(json.dumps(result))
        return

    unknown = [s for s in args.strategies if s not in STRATEGIES]
    if unknown:
        p.error(f"unknown strategies: {', '.join(unknown)}")
    latencies = args.latency or [0.0]
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    folder, gen_s = tier_folder(root, args.tokens, args.domain, args.seed)
    print(
        f"corpus: {folder} ({'generated in %.1f s' % gen_s if gen_s is not None else 'reused'}); "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    if args.dense_probe:
        dense_probe(args, folder)

    indexes = _build_indexes(args, root, folder)
    if not args.strategies:
        return
    _run_strategies(args, root, folder, latencies, indexes)


def _parser() -> argparse.ArgumentParser:
    """The arguments of the parent and (hidden) of its workers."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tokens", default="10M", help="corpus size (a tier name or a number)")
    p.add_argument("--questions", type=int, default=8)
    p.add_argument(
        "--latency",
        type=float,
        action="append",
        help="stub seconds per call (repeatable; default 0)",
    )
    p.add_argument(
        "--strategies",
        nargs="*",
        default=list(ALL_STRATEGIES),
        help="default: all (none: only --dense-probe)",
    )
    p.add_argument("--concurrency", type=int, default=8, help="answer_many's concurrency")
    p.add_argument(
        "--reply-tokens",
        type=int,
        default=200,
        help="words in the stub's text replies (MemAgent's memory)",
    )
    p.add_argument("--root", default="runs/scale", help="corpus, index caches and run folders")
    p.add_argument("--domain", default="finance")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=3600, help="seconds per subprocess")
    p.add_argument(
        "--dense-probe",
        type=int,
        default=0,
        help="embed this many chunks and extrapolate the dense index time",
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="build the indexes again (default: reuse a build of an earlier run)",
    )
    p.add_argument(
        "--repeat",
        action="store_true",
        help="answer each batch twice per process; 'ours' then shows first / second",
    )
    p.add_argument(
        "--no-prepare",
        action="store_true",
        help="no prepare phase: full_context's first question formats and tokenizes the corpus",
    )
    p.add_argument("--json", help="also write every result here")
    # worker-only
    p.add_argument("--worker", choices=("index", "run"), help=argparse.SUPPRESS)
    p.add_argument("--strategy", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--index-dir", help=argparse.SUPPRESS)
    p.add_argument("--run-dir", help=argparse.SUPPRESS)
    p.add_argument("--worker-latency", type=float, default=0.0, help=argparse.SUPPRESS)
    return p


def _build_indexes(args: argparse.Namespace, root: Path, folder: Path) -> dict[str, dict[str, Any]]:
    """Each indexed strategy's cold build (a worker each, or the figures of an earlier run's),
    printed."""
    indexes: dict[str, dict[str, Any]] = {}
    for name in args.strategies:
        if STRATEGIES.get(name).uses_index:
            built = root / "index" / f"{name}.json"  # the cold build's figures, kept with its cache
            if built.exists() and not args.rebuild:
                indexes[name] = {**json.loads(built.read_text()), "reused": True}
            else:
                indexes[name] = run_worker(
                    "index", name, args, data=folder, index_dir=root / "index" / name
                )
                if "error" not in indexes[name]:
                    built.write_text(json.dumps(indexes[name]))
            r = indexes[name]
            print(
                f"index {name}: "
                + (
                    r["error"]
                    if "error" in r
                    else (
                        f"{r['retriever']} over {r['chunks']:,} chunks of {r['chunking']} built "
                        f"in {r['build_s']:.1f} s, "
                        f"{mib(r['index_bytes'])} MiB on disk, "
                        f"build peak RSS {r['rss_mib']:,.0f} MiB"
                    )
                    + (" (built by an earlier run)" if r.get("reused") else "")
                ),
                flush=True,
            )
    return indexes


def _run_strategies(
    args: argparse.Namespace,
    root: Path,
    folder: Path,
    latencies: list[float],
    indexes: dict[str, dict[str, Any]],
) -> None:
    """Run each strategy at each stub latency (a worker each), then print the table and the bars."""
    results: dict[str, Any] = {"indexes": indexes, "runs": []}
    header = (
        "| strategy | latency ms | answered | calls | prompt tokens | load s | wall s | overhead "
        "ms/call | bare call ms "
        "| ours ms/call | peak RSS MiB | index MiB / prepare s | run folder MiB (peak / after) "
        "| checkpoints MB (peak / after) | bars |\n" + "|---" * 15 + "|"
    )
    rows, misses = [], []
    for latency in latencies:
        with stub_server(latency, args.reply_tokens, tools=True) as url:
            for name in args.strategies:
                r = run_worker(
                    "run",
                    name,
                    args,
                    data=folder,
                    url=url,
                    worker_latency=latency,
                    index_dir=root / "index" / name,
                    run_dir=root / f"run-{latency * 1000:g}ms" / name,
                )
                row, miss = format_row(name, latency, r, indexes.get(name), args.concurrency)
                print(row, flush=True)
                rows.append(row)
                misses += miss
                results["runs"].append({"strategy": name, "latency": latency, **r})
    print(
        f"\n{folder.name}: {args.questions} questions, concurrency {args.concurrency}, stub "
        f"replies of {args.reply_tokens} words; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(header)
    print("\n".join(rows))
    print(
        "\nDone-when bars (RSS < 4 GiB, overhead <= 15 ms/call at 0 ms, MemAgent checkpoints < "
        "200 MB): " + ("all met" if not misses else "missed: " + "; ".join(misses))
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
