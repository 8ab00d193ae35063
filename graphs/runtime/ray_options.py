"""The options of a strategy stage that can run on Ray (:class:`RayMapOptions`: ``map_executor``,
``ray_address``, ``ray_max_in_flight``, ``ray_endpoints``, validated once), and the
:class:`~graphs.plugin.registry.RayStage` that ``--ray`` and ``--endpoints`` turn into those
options. The structured strategy's Map stage, RAPTOR's summaries and HippoRAG's OpenIE share both
(the map itself: :mod:`longctx.graphs.runtime.ray_map`); each config adds its own batch size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from longctx.graphs.plugin.config import ConfigError, StrategyConfig, option
from longctx.graphs.plugin.registry import RayStage

#: The options that decide where a stage runs, not what it asks: a resumed run does not answer
#: again the rows answered with other values (``longctx.experiments.runner.changed_settings``).
RAY_RUNTIME_FIELDS = frozenset(
    {
        "map_executor",
        "ray_address",
        "ray_max_in_flight",
        "ray_endpoints",
        "ray_batch_documents",
        "ray_batch_clusters",
        "ray_batch_passages",
    }
)


@dataclass(frozen=True, kw_only=True)
class RayMapOptions(StrategyConfig):
    """Where a strategy's map of model calls runs: in this process or as Ray tasks.

    Attributes:
        map_executor: ``"local"`` (this process, on ``concurrency`` threads) or ``"ray"`` (Ray
            tasks, a batch each; every task runs its batch on ``concurrency`` threads).
        ray_address: Ray cluster to join with ``map_executor="ray"`` (``auto``, ``HOST:6379``,
            ``ray://HOST:10001``); none: a running session, ``$RAY_ADDRESS`` or a new local
            instance.
        ray_max_in_flight: Ray tasks in flight at once per answer (calls in flight: at most this
            times ``concurrency``).
        ray_endpoints: With ``map_executor="ray"`` and an OpenAI-compatible model: base URLs of
            servers running the same model; each Ray task goes to the one with the fewest tasks
            in flight (``longctx run --ray --endpoints`` fills it in). Empty: the model's own
            server.
    """

    map_executor: Literal["local", "ray"] = option(
        "local", source="issue 15: a stage runs on Ray with --ray, like the indexer"
    )
    ray_address: str | None = option(
        None, source="as longctx index --ray / run --ray: none is $RAY_ADDRESS or a local instance"
    )
    ray_max_in_flight: int = option(
        4, min=1, source="ours: a few tasks per node of a small cluster; raise with the cluster"
    )
    ray_endpoints: tuple[str, ...] = option(
        (), source="as longctx run --endpoints: several servers of one model share the stage"
    )

    def check(self) -> None:
        """``ray_address`` and ``ray_endpoints`` only with ``map_executor="ray"``; endpoints are
        http(s) base URLs."""
        if self.ray_address is not None and self.map_executor != "ray":
            raise ConfigError(
                f"Option 'ray_address' ({self.ray_address!r}) needs map_executor='ray'"
            )
        if self.ray_endpoints and self.map_executor != "ray":
            raise ConfigError(
                f"Option 'ray_endpoints' ({list(self.ray_endpoints)}) needs map_executor='ray'"
            )
        for url in self.ray_endpoints:
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ConfigError(f"Option 'ray_endpoints' takes http(s) base URLs, got {url!r}")


def ray_options(address: str | None) -> dict[str, Any]:
    """The stage as Ray tasks, on the cluster at ``address`` (``None``: ``$RAY_ADDRESS`` or a new
    local one)."""
    return {"map_executor": "ray", **({"ray_address": address} if address else {})}


def spread_map(options: Mapping[str, Any], endpoints: Sequence[str]) -> Mapping[str, Any]:
    """``options`` whose stage on Ray also spreads its tasks over ``endpoints`` (their
    ``ray_endpoints``, unless the options set it): a run's unit is one question's answer, and the
    stage is where its calls are."""
    if len(endpoints) < 2 or options.get("map_executor") != "ray" or "ray_endpoints" in options:
        return options
    return {**options, "ray_endpoints": list(endpoints)}


#: The registry entry's ``ray_stage`` of a strategy whose config has the options above.
MAP_ON_RAY = RayStage(options=ray_options, spread=spread_map)
