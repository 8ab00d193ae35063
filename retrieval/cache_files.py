"""Small JSON files in the cache folder (the calibration, the remembered tokenize probes): read
leniently, replaced whole, so a reader never sees half a file and a torn one costs a
re-measurement."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; ``{}`` when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json_object(path: Path, data: dict[str, Any], *, indent: int = 1) -> None:
    """Replace ``path`` with ``data`` whole: written to a temporary file of this process and thread,
    then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=indent))
    tmp.replace(path)


__all__ = ["read_json_object", "write_json_object"]
