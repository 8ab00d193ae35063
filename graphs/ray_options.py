"""The options of a strategy stage that runs on Ray (``map_executor``, ``ray_address``,
``ray_endpoints``): their one validation rule, and the :class:`~graphs.registry.RayStage` that
``--ray`` and ``--endpoints`` turn into those options. The structured strategy's Map stage,
RAPTOR's summaries and HippoRAG's OpenIE share both (the map itself: :mod:`graphs.ray_map`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphs.config import ConfigError
from graphs.registry import RayStage


def check_ray_options(cfg: Any) -> None:
    """``ray_address`` and ``ray_endpoints`` only with ``map_executor="ray"``; endpoints are http(s) base URLs."""
    if cfg.ray_address is not None and cfg.map_executor != "ray":
        raise ConfigError(f"Option 'ray_address' ({cfg.ray_address!r}) needs map_executor='ray'")
    if cfg.ray_endpoints and cfg.map_executor != "ray":
        raise ConfigError(
            f"Option 'ray_endpoints' ({list(cfg.ray_endpoints)}) needs map_executor='ray'"
        )
    for url in cfg.ray_endpoints:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"Option 'ray_endpoints' takes http(s) base URLs, got {url!r}")


def ray_options(address: str | None) -> dict[str, Any]:
    """The stage as Ray tasks, on the cluster at ``address`` (``None``: ``$RAY_ADDRESS`` or a new local one)."""
    return {"map_executor": "ray", **({"ray_address": address} if address else {})}


def spread_map(options: Mapping[str, Any], endpoints: Sequence[str]) -> Mapping[str, Any]:
    """``options`` whose stage on Ray also spreads its tasks over ``endpoints`` (their ``ray_endpoints``,
    unless the options set it): a run's unit is one question's answer, and the stage is where its calls are."""
    if len(endpoints) < 2 or options.get("map_executor") != "ray" or "ray_endpoints" in options:
        return options
    return {**options, "ray_endpoints": list(endpoints)}


#: The registry entry's ``ray_stage`` of a strategy whose config has the options above.
MAP_ON_RAY = RayStage(options=ray_options, spread=spread_map)
