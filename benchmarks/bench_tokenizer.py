"""Token counting speed of the server tokenizer path (llama-cpp-python's ``/extras/tokenize``).

    python -m benchmarks.bench_tokenizer [--tokens 10000000] [--url http://127.0.0.1:PORT/v1]

Without ``--url`` it serves the embedded GGUF with ``llama_cpp.server`` on loopback. It counts a
synthetic corpus of about ``--tokens`` cl100k tokens through the server in pieces (several piece
sizes and request concurrencies), checks the pieces' total against the embedded model's own count of
the whole text, and prints tokens per second; the in-process tokenizers (the embedded model's own,
cl100k) are printed beside it. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator

from benchmarks.synthetic_text import generate_corpus
from longctx.agents.embedded_chat import EmbeddedChatModel, embedded_model_path
from longctx.graphs.tokenizers.server_tokenizer import probe_server
from longctx.graphs.tokenizers.tokenize_routes import ServerTokenizer, server_root
from longctx.retrieval.tokenizers import tiktoken_tokenizer


@contextlib.contextmanager
def served(url: str | None) -> Iterator[str]:
    """``url``, or a llama_cpp.server on the embedded model for the duration."""
    if url:
        yield url
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tempfile.TemporaryFile(mode="w+")
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(embedded_model_path()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(
        [*cmd, "--n_ctx", "8192", "--model_alias", "smollm2"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ},
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(360):
            try:
                urllib.request.urlopen(f"{base}/models", timeout=2)
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("llama_cpp.server exited") from None
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def timed(label: str, count, text: str, reference: int | None = None) -> int:
    """Count ``text`` once with ``count`` and print the rate."""
    started = time.perf_counter()
    n = count(text)
    seconds = time.perf_counter() - started
    check = (
        ""
        if reference is None
        else f"  (vs the model's own count of the whole text: {n - reference:+d})"
    )
    print(f"{label:<46} {n:>12,} tokens {seconds:>8.2f} s {n / seconds:>12,.0f} tokens/s{check}")
    return n


def main() -> None:
    """Run the measurements and print them."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tokens", type=int, default=10_000_000, help="corpus size in cl100k tokens")
    p.add_argument(
        "--url", default=None, help="an OpenAI-compatible base URL with a tokenize endpoint"
    )
    p.add_argument("--model", default="smollm2")
    args = p.parse_args()

    corpus = generate_corpus(args.tokens)
    text = "\n\n".join(d.text for d in corpus.documents)
    print(
        f"corpus: {len(corpus.documents):,} documents, {len(text):,} characters, about "
        f"{args.tokens:,} cl100k tokens"
    )
    cl100k = tiktoken_tokenizer("cl100k_base")
    timed("cl100k (tiktoken, in process)", lambda t: len(cl100k.encode(t)), text)
    own = EmbeddedChatModel()
    reference = timed(
        "embedded model's own (llama.cpp, in process)", lambda t: len(own.tokenize(t)), text
    )
    with served(args.url) as url:
        probed = probe_server(url, args.model)
        if probed is None:
            raise SystemExit(f"{url} has no tokenize endpoint we know")
        print(
            f"server: {probed.dialect} at {server_root(url)}; pieces concatenate exactly: "
            f"{probed.max_chars is not None}"
        )
        for max_chars, workers in [
            (16_000, 1),
            (16_000, 8),
            (64_000, 8),
            (256_000, 8),
            (1_000_000, 4),
        ]:
            tok = ServerTokenizer(
                root=server_root(url),
                model=args.model,
                dialect=probed.dialect,
                max_chars=max_chars,
                workers=workers,
            )
            timed(
                f"server, {max_chars:,}-char pieces, {workers} in flight",
                lambda t, tok=tok: len(tok.encode(t)),
                text,
                reference,
            )
            tok.close()


if __name__ == "__main__":
    main()
