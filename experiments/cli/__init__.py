"""The ``longctx`` command line: parser, options, subcommands, demo; ``python -m`` runs it."""

from longctx.experiments.cli.app import main

__all__ = ["main"]
