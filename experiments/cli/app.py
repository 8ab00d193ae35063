"""The ``longctx`` command line: answer, index, run experiments, report on them.

Startup is instant: this module and :mod:`longctx.experiments.cli.parser` load only the standard
library (and the key redaction), so ``--help`` and argument errors answer at once; the
subcommands (:mod:`longctx.experiments.cli.commands`) and the engines they use load once a command
line has parsed.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from longctx.experiments.cli.parser import build_parser, check_strategy_list
from longctx.retrieval.redaction import redacted_terminal

__all__ = ["EXIT_INTERRUPTED", "build_parser", "main", "one_line"]

#: Exit status after Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``longctx`` console script; nothing it prints carries a key (see
    :mod:`longctx.retrieval.redaction`)."""
    with redacted_terminal():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    shown = warnings.showwarning
    warnings.showwarning = functools.partial(_show_warning, shown, set())
    try:
        return _run(args)
    except KeyboardInterrupt:
        print("\nlongctx: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        warnings.showwarning = shown


def _show_warning(
    shown: Any, said: set, message: Any, category: type[Warning], *args: Any, **kwargs: Any
) -> None:
    """A warning meant for users (``one_line``: a cost plan's) as one line, not a file, line and
    source; once per kind and strategy (``said``): a run checks each unit's plan and would repeat
    it per unit."""
    if getattr(category, "one_line", False):
        key = (category, getattr(message, "strategy", str(message)))
        if key not in said:
            said.add(key)
            print(f"longctx: warning: {message}", file=sys.stderr)
    else:
        shown(message, category, *args, **kwargs)


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command == "run":  # a mistyped name is reported before the engines load
            check_strategy_list(args.strategies)
    except KeyError as exc:
        return _user_error(args, exc)
    # the subcommands import the engines (LangGraph, LangChain, retrievers):
    # only once the line has parsed
    from longctx.experiments.cli.commands import COMMANDS, USER_ERRORS, RunInterrupted

    try:
        return COMMANDS[args.command](args)
    except USER_ERRORS as exc:
        return _user_error(args, exc)
    except RunInterrupted as exc:  # Ctrl-C: finished answers kept, the rerun resumes
        print(f"\nlongctx: {exc}", file=sys.stderr)
        if (
            exc.in_flight
        ):  # answers still running in threads that cannot be stopped: do not wait for them
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)
        return EXIT_INTERRUPTED


def _user_error(args: argparse.Namespace, exc: Exception) -> int:
    """Print a bad input's message on one line (exit status 2); ``--debug`` shows the
    traceback instead."""
    if args.debug:
        raise exc
    print(f"longctx: error: {one_line(exc)}", file=sys.stderr)
    return 2


def one_line(exc: BaseException) -> str:
    """The error's message on one line (a ``KeyError`` without the quotes ``str()`` adds)."""
    text = str(exc.args[0]) if isinstance(exc, KeyError) and len(exc.args) == 1 else str(exc)
    return " ".join(text.split()) or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
