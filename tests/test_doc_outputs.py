"""What the README and docs/ quote from a command's output still matches what the command prints.

Three kinds of quote, three checks:

- **Regenerated.** A fenced block preceded by ``<!-- output: COMMAND -->`` is what COMMAND printed;
  the test runs it again and compares. COMMAND is a ``longctx ...`` command line (run in-process,
  at a terminal 100 columns wide) or ``the python block above`` (the page's previous Python block,
  run as a script). Only cheap, deterministic commands get such a block: help texts, plans.
  ``python tests/test_doc_outputs.py --write`` rewrites the blocks from what the commands print.
- **Cited.** A figure measured by an expensive or timed run (the demo, a benchmark script) cannot
  be regenerated in a test; its block or table is preceded by
  ``<!-- measured: COMMAND, DATE, COMMIT -->`` naming the command that printed it (a ``longctx``
  subcommand or a ``python -m`` module that exists), the day and the commit. A run's summary
  table (a header starting ``| strategy | score |``) and every fenced block without a language (a
  program's output) must carry one or an output marker.
- **Runnable.** Every ``longctx ...`` line of a bash block parses with the command line's own parser
  (no removed subcommand or option), and every ``python -m MODULE`` names a module that exists.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = re.compile(
    r"<!-- output: (?P<command>[^\n]*?) -->\n```(?P<lang>\w*)\n(?P<body>.*?)```", re.S
)
MEASURED = re.compile(r"^[ \t]*<!-- measured: (?P<cite>[^\n]*?) -->", re.M)  # a line of its own
PYTHON_BLOCK = re.compile(r"```python\n(?P<body>.*?)```", re.S)
BASH_BLOCK = re.compile(r"```bash\n(?P<body>.*?)```", re.S)
PYTHON_M = re.compile(r"python -m ([A-Za-z_][\w.]*)")
CITE = re.compile(r"(?P<command>.+?), (?P<date>20\d\d-\d\d-\d\d), (?P<commit>[0-9a-f]{7,40})\b")
#: A fenced block: the two lines before it, its language (none: a program's output) and its text.
FENCE = re.compile(
    r"(?P<before>(?:[^\n]*\n){0,2})[ \t]*```(?P<lang>[\w-]*)\n(?P<body>.*?)```", re.S
)
OUTPUT_OR_MEASURED = re.compile(r"<!-- (?:output|measured): ")


def pages() -> list[Path]:
    """The README and every page of the manual."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def outputs(text: str) -> list[re.Match[str]]:
    """The ``<!-- output: ... -->`` blocks of a page."""
    return list(OUTPUT.finditer(text))


def printed(command: str, text: str, at: int) -> str:
    """What COMMAND prints now (``the python block above``: the last Python block before ``at``)."""
    out = io.StringIO()
    if command == "the python block above":
        block = list(PYTHON_BLOCK.finditer(text[:at]))[-1]["body"]
        with contextlib.redirect_stdout(out):
            exec(compile(block, "docs", "exec"), {"__name__": "__docs__"})
        return out.getvalue()
    argv = shlex.split(command)
    assert argv[0] == "longctx", (
        f"an output block names a longctx command or the python block above: {command}"
    )
    from longctx.experiments.cli.app import main

    with contextlib.redirect_stdout(out), pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "100")
        try:
            code = main(argv[1:])
        except SystemExit as exc:  # --help exits through argparse
            code = exc.code
    assert code in (0, None), f"{command} exited {code}"
    return out.getvalue()


def quoted_outputs() -> list[tuple[str, str, int, str]]:
    """(page, command, offset, block body) of every output block."""
    found = []
    for path in pages():
        text = path.read_text()
        for m in outputs(text):
            found.append((str(path.relative_to(ROOT)), m["command"], m.start(), m["body"]))
    return found


QUOTED = quoted_outputs()


def test_the_docs_quote_help_texts_and_plans():
    """The manual regenerates at least the help texts and the plans (a marker lost in an edit
    shows)."""
    commands = {command for _, command, _, _ in QUOTED}
    assert {"longctx --help", "longctx answer --help", "the python block above"} <= commands


@pytest.mark.parametrize("page,command,at,body", QUOTED, ids=[f"{p}:{c}" for p, c, _, _ in QUOTED])
def test_a_quoted_output_is_what_the_command_prints(page, command, at, body, monkeypatch):
    monkeypatch.chdir(ROOT)  # the commands' paths are relative to the repository root
    now = printed(command, (ROOT / page).read_text(), at)
    assert _lines(body) == _lines(now), (
        f"{page}: the output of `{command}` changed; "
        "rerun `python tests/test_doc_outputs.py --write`"
    )


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def test_a_measured_figure_cites_its_command_its_day_and_its_commit():
    cites = 0
    for path in pages():
        text = path.read_text()
        for m in MEASURED.finditer(text):
            cite = CITE.match(m["cite"])
            assert cite, f"{path.name}: {m['cite']!r} is not COMMAND, YYYY-MM-DD, COMMIT"
            _check_command(cite["command"], path.name)
            cites += 1
        for table in re.finditer(r"\n\| strategy \| score \|", text):
            before = text[: table.start()].rstrip().rsplit("\n\n", 1)[-1]
            assert MEASURED.search(text[max(0, table.start() - 2000) : table.start()]), (
                f"{path.name}: a run's summary table without <!-- measured: ... --> "
                f"before it: {before[:80]!r}"
            )
    assert cites >= 20


def test_a_block_of_program_output_says_where_it_comes_from():
    """A fenced block without a language is what a program printed: it says which program, by an
    output marker (regenerated) or a measured one (cited). Code and diagrams name their language."""
    for path in pages():
        for m in FENCE.finditer(path.read_text()):
            if m["lang"] == "":
                assert OUTPUT_OR_MEASURED.search(m["before"]), (
                    f"{path.name}: a block of output without <!-- output: ... --> or "
                    f"<!-- measured: ... --> before it: {m['body'][:80]!r}"
                )


def _check_command(command: str, page: str) -> None:
    """A cited command exists: a longctx subcommand line that parses, or a python -m module."""
    if command.startswith("longctx"):
        _parses(command, page)
    else:
        found = PYTHON_M.match(command)
        assert found, f"{page}: cite a longctx or python -m command: {command!r}"
        _module_exists(found[1], page)


def _parses(command: str, page: str) -> None:
    from longctx.experiments.cli.parser import build_parser

    argv = shlex.split(command.replace(".venv/bin/longctx", "longctx"))[1:]
    parser = build_parser()
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            parser.parse_args(argv)
        except SystemExit as exc:
            assert exc.code == 0, f"{page}: `{command}` no longer parses: {err.getvalue().strip()}"


def _module_exists(module: str, page: str) -> None:
    top = module.split(".")[0]
    if top in ("benchmarks", "tests"):  # the repository's folders, outside the package
        path = ROOT.joinpath(*module.split("."))
        assert path.with_suffix(".py").is_file() or (path / "__main__.py").is_file(), (
            f"{page}: python -m {module}: no such script"
        )
    elif top == "longctx":
        assert importlib.util.find_spec(module) is not None, (
            f"{page}: python -m {module}: no such module"
        )


def commands_in_bash_blocks() -> list[tuple[str, str]]:
    """(page, command) of every ``longctx`` line of a bash block, continuation lines joined."""
    found = []
    for path in pages():
        for block in BASH_BLOCK.finditer(path.read_text()):
            joined = re.sub(r"\\\n\s*", " ", block["body"])
            for line in joined.splitlines():
                command = line.split("  #")[0].strip()
                command = re.sub(r"^(?:\w+=\S+ )+", "", command)  # VAR=value before it
                if re.match(r"(?:\.venv/bin/)?longctx\b", command) and " ... " not in command:
                    found.append((str(path.relative_to(ROOT)), command))
    return found


def test_every_quoted_longctx_command_parses():
    commands = commands_in_bash_blocks()
    assert len(commands) >= 20
    for page, command in commands:
        _parses(command, page)


def test_every_python_m_module_quoted_exists():
    for path in pages():
        for module in PYTHON_M.findall(path.read_text()):
            _module_exists(module.rstrip("."), path.name)


def _write() -> None:
    """Rewrite every output block from what its command prints now."""
    import os

    os.chdir(ROOT)
    for path in pages():
        text = path.read_text()
        for m in reversed(outputs(text)):
            now = printed(m["command"], text, m.start()).strip("\n")
            body_start = m.start("body")
            text = text[:body_start] + now + "\n" + text[m.end("body") :]
        path.write_text(text)


if __name__ == "__main__" and "--write" in sys.argv:
    _write()
