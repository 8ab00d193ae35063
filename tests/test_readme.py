"""Every code block of the README, and of the pages of docs/ that hold what the README held before
it became a front door, runs as pasted, or says why it cannot (a key, a server, data).

Blocks are run against a real loopback OpenAI-compatible stub (`benchmarks.stub_server`,
answering PAI's tool calls too) through ``LONGCTX_LLM=openai:stub``, so they finish in
seconds; paths under ``runs/`` and ``corpora/`` go to a temporary folder. A block preceded
by ``<!-- readme: REASON -->`` is not run; the reason must say what it needs.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from benchmarks.stub_server import stub_server
from longctx.experiments.cli.app import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(
    r"(?:<!-- readme: (?P<reason>[^\n]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S
)


#: The README and the pages its sections moved to (issue #50): their blocks run as the README's did.
PAGES = (
    "README.md",
    *(
        f"docs/{name}.md"
        for name in (
            "demo",
            "own-documents",
            "python",
            "memagent",
            "budgets",
            "cli",
            "servers",
            "configuration",
            "running",
            "index-cache",
            "design",
            "layout",
        )
    ),
)


def blocks() -> list[tuple[str, str, str | None]]:
    """(language, body, reason not run) of every fenced block of the README and its pages."""
    return [
        (m["lang"], m["body"], m["reason"])
        for page in PAGES
        for m in BLOCK.finditer((ROOT / page).read_text())
    ]


def commands(body: str) -> list[str]:
    """The shell commands of a bash block, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [
        line.split("  #")[0].strip()
        for line in joined.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


RUNNABLE = [
    (lang, body) for lang, body, reason in blocks() if reason is None and lang in ("bash", "python")
]


def test_every_block_runs_or_says_why_not():
    for lang, body, reason in blocks():
        if reason is not None:
            assert re.search(r"needs|set-up", reason), f"say what the block needs: {reason!r}"
        else:
            assert lang in ("bash", "python", "toml", "text", ""), lang
    assert len(RUNNABLE) >= 6


@pytest.fixture
def readme_env(outputs, monkeypatch, stub_url):
    for key, value in {
        "LONGCTX_LLM": "openai:stub",
        "OPENAI_BASE_URL": stub_url,
        "LONGCTX_CACHE_DIR": str(outputs / "cache"),
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(ROOT)  # README paths are relative to the repository root
    return outputs


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """One folder for the whole README, as a reader's working copy: later blocks use
    earlier outputs."""
    return tmp_path_factory.mktemp("readme")


@pytest.fixture(scope="module")
def stub_url():
    with stub_server(latency=0.0, reply_tokens=8, tools=True, properties=1) as url:
        yield url


def _localise(text: str, tmp: Path) -> str:
    return re.sub(r"(?<![\w/])(runs|corpora)/", lambda m: f"{tmp}/{m.group(1)}/", text)


@pytest.mark.parametrize(
    "lang,body", RUNNABLE, ids=[f"{lang}-{i}" for i, (lang, _) in enumerate(RUNNABLE)]
)
def test_readme_block_runs(lang, body, readme_env, capsys):
    """In-process: a python block is executed as a script; a shell line is the CLI's main()."""
    if lang == "python":
        exec(compile(_localise(body, readme_env), "README.md", "exec"), {"__name__": "__readme__"})
        return
    for command in commands(body):
        if "..." in command:  # a placeholder question: run it with a real one
            command = command.replace('"..."', '"Where is Vantaa Robotics based?"')
        argv = shlex.split(_localise(command, readme_env))
        assert argv[0] == ".venv/bin/longctx", f"README commands use .venv/bin paths: {command}"
        try:
            code = cli_main(argv[1:])
        except SystemExit as exc:  # --help exits through argparse
            code = exc.code
        assert code == 0, f"{command}\n{capsys.readouterr().err[-3000:]}"


def test_call_counts_stated_in_the_readme_follow_from_the_defaults():
    """The README's MemAgent call counts are what the default config gives (a fact checked,
    not typed)."""
    import math

    from longctx.graphs import STRATEGIES

    chunk = STRATEGIES.get("memagent").make_config().chunk_tokens
    text = (ROOT / "README.md").read_text()
    for tokens, label in ((4_000_000, "4M"), (10_000_000, "10M")):
        assert (
            f"{math.ceil(tokens / chunk) + 1:,} at {label}" in text
            or f"{math.ceil(tokens / chunk) + 1:,} calls at {label}" in text
        )


def test_test_counts_in_the_docs_say_when_they_were_measured():
    """A count of tests goes stale with the next test added ("689 passed in 3m24s" stood beside
    2,017 tests): where the README or docs/testing.md gives one, its paragraph or table row
    dates it."""
    count = re.compile(r"\b\d[\d,]* (?:tests|passed)\b")
    dated = re.compile(r"\b20\d\d-\d\d-\d\d\b")
    for doc in ("README.md", "docs/testing.md"):
        for part in re.split(r"\n\s*\n|\n(?=\|)", (ROOT / doc).read_text()):
            for found in count.findall(part):
                assert dated.search(part), f"{doc}: {found!r} without the date it was measured"
