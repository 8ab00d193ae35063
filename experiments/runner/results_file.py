"""``results.jsonl``: every finished (sample, strategy) pair, one JSON row a line, appended durably
and read back whatever a kill or an editor left.

Rows are strict JSON whatever a strategy returns (:mod:`longctx.agents.jsonsafe`); one that cannot
be kept is a failed row saying why. Reading tolerates torn tails, bad lines and a BOM: an unreadable
line's pair counts as not answered, so a rerun answers it again.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.agents.jsonsafe import MAX_CHARS, dumps, json_safe
from longctx.experiments.runner.row_schema import row_problem
from longctx.retrieval.redaction import redact_value

log = logging.getLogger(__name__)

RESULTS_FILE = "results.jsonl"
#: A byte-order mark some editors put before the first line.
BOM = b"\xef\xbb\xbf"
#: Unreadable result lines named one by one in the warnings (the rest are counted).
MAX_REPORTED = 5


def read_rows(out: Path) -> list[dict[str, Any]]:
    """All result rows written so far, read to survive what a kill or a hand edit leaves.

    Read as bytes and split on newlines before decoding, so a torn last line (a killed
    writer, cut anywhere, inside a multi-byte character too) is dropped alone; the next
    append cuts it off. A line that is not UTF-8, not JSON, or JSON that is not a usable row
    (``[1,2]``, ``{}``, a count of ``1e308``, a prediction that is not text: see
    :mod:`longctx.experiments.runner.row_schema`) is skipped with a warning naming the file, the
    line and what is wrong; its pair counts as not answered, so a rerun answers it again. A BOM is
    ignored.
    """
    path = Path(out) / RESULTS_FILE
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    rows, problems = [], []
    for number, line in enumerate(lines, 1):
        row, problem = parse_row(line)
        if row is not None:
            rows.append(row)
        elif problem:
            problems.append(f"line {number}: {problem}")
    if tail.strip():
        row, problem = parse_row(tail)
        if (
            row is not None
        ):  # a whole row whose newline is missing: kept (the next append adds the newline)
            rows.append(row)
        elif is_whole_json(tail):  # whole, yet not a usable row
            problems.append(f"line {len(lines) + 1}: {problem}")
        else:
            log.warning(
                "%s: line %d is torn (%d bytes, left by a killed run); ignored, the next run "
                "cuts it off",
                path,
                len(lines) + 1,
                len(tail),
            )
    for problem in problems[:MAX_REPORTED]:
        log.warning("%s, %s; skipped", path, problem)
    if len(problems) > MAX_REPORTED:
        log.warning("%s: %d more unreadable lines skipped", path, len(problems) - MAX_REPORTED)
    return rows


def parse_row(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """``(row, None)`` for a line holding a result row, else ``(None, what is wrong)``
    (``(None, None)`` for a blank line)."""
    line = line.removeprefix(BOM).strip()
    if not line:
        return None, None
    try:
        row = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 ({exc.reason} at byte {exc.start})"
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON ({getattr(exc, 'msg', type(exc).__name__)})"
    problem = row_problem(row)
    return (None, problem) if problem else (row, None)


def is_whole_json(line: bytes) -> bool:
    """Whether ``line`` is one complete JSON value (a row cut by a kill never is: its ``}``
    comes last)."""
    try:
        json.loads(line.removeprefix(BOM).decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return True


def latest_rows(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The last row of each (sample, strategy) pair."""
    return {(r["sample_id"], r["strategy"]): r for r in rows}


def append_row(sink: Any, row: dict[str, Any], counts: dict[str, int]) -> None:
    """Append one result row durably (flushed and fsynced: a kill loses only what is in flight).

    The row is made plain JSON data, then every string of it is redacted
    (:func:`longctx.retrieval.redaction.redact_value`: an error may quote a provider's reply that
    echoes the request's credentials, and bytes may hold them too), then written by
    :func:`row_line` (JSON-safe, bounded; a row that cannot be written becomes a failed row
    saying why). A torn last line left by a killed writer is cut off first, so it cannot
    swallow this row.
    """
    line, status = row_line(row)
    _repair_tail(sink)
    sink.write(line)
    sink.flush()
    os.fsync(sink.fileno())
    counts[status] += 1


def row_line(row: dict[str, Any]) -> tuple[str, str]:
    """The JSONL line of ``row`` and its status: every value JSON-safe and bounded
    (:func:`longctx.agents.jsonsafe.json_safe`: characters, values, cycles); an answer that is not
    text or too long to keep, or a row that still cannot be serialized, is written as a failed
    row naming why (its rerun retries it)."""
    try:
        problem = _unkeepable_answer(row)
        if problem is None:  # plain data first, so bytes that hold a key are redacted too
            return dumps(redact_value(json_safe(row, max_chars=None, max_total=None))) + "\n", row[
                "status"
            ]
    except Exception as exc:  # noqa: BLE001
        # whatever it is, the row is recorded as failed, never the run lost
        problem = redact_value(f"{type(exc).__name__}: {exc}")
    keep = {
        k: row.get(k)
        for k in (
            "sample_id",
            "benchmark",
            "dataset",
            "strategy",
            "corpus_tokens",
            "metadata",
            "seconds",
        )
    }
    failed = {**keep, "status": "failed", "error": f"ResultNotWritable: {problem}"}
    log.warning(
        "%s / %s: the result cannot be written (%s); recorded as failed",
        row.get("sample_id"),
        row.get("strategy"),
        problem,
    )
    return dumps(redact_value(json_safe(failed))) + "\n", "failed"


def _unkeepable_answer(row: dict[str, Any]) -> str | None:
    """Why the scored text of an ok row cannot be kept whole, or ``None``: it is not text (a
    strategy handing back a mapping would make the whole run unreportable), or it is too long
    (a cut prediction would be scored as if the model had said it)."""
    if row.get("status") != "ok":
        return None
    for key in ("prediction", "answer"):
        value = row.get(key)
        if not isinstance(value, str):
            return (
                f"its {key} is {'None' if value is None else 'a ' + type(value).__name__}, not "
                "text (a strategy's answer must be a string)"
            )
        if len(value) > MAX_CHARS:
            return (
                f"its {key} holds {len(value):,} characters, more than the {MAX_CHARS:,} a "
                "row keeps"
            )
    return None


def _repair_tail(sink: Any) -> None:
    """End the file behind ``sink`` (opened for appending) with a complete line: a torn last
    line is cut off; a whole row that only lacks its newline gets one."""
    sink.flush()
    fd = sink.fileno()
    size = os.fstat(fd).st_size
    if size == 0:
        return
    with open(sink.name, "rb") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        end = size
        while end > 0:  # the last newline, read backwards in blocks
            start = max(0, end - 65536)
            f.seek(start)
            block = f.read(end - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                end = start + cut + 1
                break
            end = start
        f.seek(end)
        tail = f.read()
    if is_whole_json(tail):  # a whole line (a row, or one the reader will name and skip): kept
        os.write(fd, b"\n")
        return
    log.warning("%s: dropping a torn last line of %d bytes (a killed run)", sink.name, size - end)
    os.ftruncate(fd, end)
