"""The price table a run was given (``longctx run --prices FILE``), kept in its folder
for its report.

``run`` writes the validated table to ``prices.json`` beside ``manifest.json``; ``report`` of that
folder prices at it when no ``--prices`` is given (an explicit one wins), so a report made later,
elsewhere or without the file shows the USD the run's ``--max-cost`` counted at. A resume given
another table replaces it; one given none keeps it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from longctx.experiments.planning.prices import (
    DEFAULT_PRICES_DATE,
    PriceRow,
    load_prices,
    parse_prices,
)
from longctx.retrieval.redaction import redact_value

#: The run folder's copy of its price table.
RUN_PRICES_FILE = "prices.json"


def save_run_prices(out: str | Path, table: dict[str, PriceRow]) -> Path:
    """Write ``table`` (as :func:`~experiments.planning.prices.load_prices` gave it) to
    ``out/prices.json``, in the price file's own format, atomically; a model id's credentials are
    redacted as in the manifest."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = {
        model: {
            "prompt": row[0],
            "completion": row[1],
            **({"cached": row[2]} if len(row) > 2 else {}),
        }
        for model, row in table.items()
    }
    path = out / RUN_PRICES_FILE
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(redact_value(data), indent=2, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return path


def report_prices(
    out: str | Path, prices: str | Path | dict[str, Any] | None
) -> tuple[dict[str, PriceRow] | None, str]:
    """The table a report of ``out`` prices at, and which one it is, for the report to say.

    ``prices`` (a ``--prices`` file or a mapping) wins; without it, the run's own copy
    (:data:`RUN_PRICES_FILE`); without that, ``None``: the built-in list prices.
    """
    if isinstance(prices, dict):
        return parse_prices(prices), "the table given to the report"
    if prices is not None:
        return load_prices(prices), f"{prices} (--prices)"
    kept = Path(out) / RUN_PRICES_FILE
    if kept.is_file():
        return load_prices(kept), f"the table the run was given ({kept})"
    return None, f"built-in list prices as of {DEFAULT_PRICES_DATE} (local models free)"
