"""Ctrl-C during a run: no new units or model calls, the answers that finish within a grace
period kept, the invocation closed in the manifest, and a second Ctrl-C that exits at once."""

from __future__ import annotations

import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from longctx.experiments.runner.manifest import finish_manifest
from longctx.experiments.runner.results_file import append_row

#: Seconds an interrupted run waits for the answers in flight before it stops without them.
INTERRUPT_GRACE_SECONDS = 2.0


class RunInterrupted(Exception):
    """A run stopped by Ctrl-C: finished rows and checkpoints are kept; rerunning resumes it.

    Attributes:
        counts: This invocation's counts (``interrupted``: answers not written).
        in_flight: Work units still running (their threads are abandoned, not joined).
    """

    def __init__(self, message: str, counts: dict[str, int], in_flight: int) -> None:
        super().__init__(message)
        self.counts = counts
        self.in_flight = in_flight


def interrupt_run(
    out: Path,
    invocation: int,
    counts: dict[str, int],
    futures: set,
    pool: ThreadPoolExecutor,
    stop: threading.Event,
    sink: Any,
) -> RunInterrupted:
    """Stop a run on Ctrl-C: no new units or model calls, the rows of units that finish within
    :data:`INTERRUPT_GRACE_SECONDS` written (a unit stopped mid-way writes none; its checkpoint
    stays), the invocation closed in the manifest. A second Ctrl-C meanwhile exits at once."""
    previous = _exit_on_next_interrupt()
    stop.set()
    pool.shutdown(wait=False, cancel_futures=True)
    tqdm.write(
        f"\nStopping: no new calls; waiting up to {INTERRUPT_GRACE_SECONDS:.0f} s for the "
        "answers in flight (Ctrl-C again quits now)",
        file=sys.stderr,
    )
    finished, running = wait(futures, timeout=INTERRUPT_GRACE_SECONDS)
    for future in finished:
        if future.cancelled() or future.exception() is not None:
            continue
        for row in future.result():
            if (
                row["status"] == "ok"
            ):  # a unit stopped by the interrupt failed because of it: not a result
                append_row(sink, row, counts)
    counts["interrupted"] = counts["pairs"] - counts["skipped"] - counts["ok"] - counts["failed"]
    finish_manifest(out, invocation, counts)
    if previous is not None:
        signal.signal(signal.SIGINT, previous)
    return RunInterrupted(
        f"interrupted: {counts['ok']} answered now, {counts['interrupted']} not answered; "
        f"rerun the same command to resume (finished answers are kept in {out})",
        counts,
        len(running),
    )


def _exit_on_next_interrupt() -> Any:
    """Make a second Ctrl-C end the process at once (exit status 130); returns the old handler."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def exit_now(signum: int, frame: Any) -> None:
        os.write(2, b"\nlongctx: interrupted again, exiting now\n")
        os._exit(130)

    return signal.signal(signal.SIGINT, exit_now)
