"""Lazy access to Ray, an optional extra: ``pip install 'longctx-lab[ray]'``.

Nothing outside the Ray code paths imports Ray; without it installed, asking for one of
those paths raises :class:`RayNotInstalledError` saying how to install it.
"""

from __future__ import annotations

import logging
from types import ModuleType

from longctx.retrieval.extras import MissingExtraError

log = logging.getLogger(__name__)

INSTALL_HINT = (
    "Ray is not installed; install the extra with: pip install 'longctx-lab[ray]' (or pip "
    "install 'ray[data]')"
)


class RayNotInstalledError(MissingExtraError):
    """A Ray code path was asked for but Ray is not installed."""


def require_ray() -> ModuleType:
    """The ``ray`` module, or :class:`RayNotInstalledError` with the install command."""
    try:
        import ray
    except ImportError as exc:
        raise RayNotInstalledError(INSTALL_HINT) from exc
    module: ModuleType = ray  # not analysed (the [ray] extra): Any to mypy
    return module


def ensure_ray(address: str | None = None) -> ModuleType:
    """Ray, connected: reuses a running session, else joins ``address`` (``auto``,
    ``ray://HOST:10001``, ``HOST:6379``) or, with no address, ``$RAY_ADDRESS`` or a new
    local instance."""
    ray = require_ray()
    if not ray.is_initialized():
        log.info("Connecting to Ray at %s", address or "a new local instance")
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
    return ray
