"""Deleted chunks of an index (tombstones): kept on disk, filtered out at search time, dropped
at compaction.

An index of an edited corpus (:meth:`Corpus.remove <retrieval.contract.Corpus.remove>`,
:meth:`~retrieval.contract.Corpus.update`) keeps the files of the index it starts from; the
chunks of the documents removed or replaced stay stored, under their stored ids, and are
marked deleted. A retriever scores or searches the stored chunks and returns only live ones,
numbered by their place among the live chunks, which is how a fresh build over the edited
corpus numbers them.
"""

from __future__ import annotations

import numpy as np


class Tombstones:
    """The deleted ids among ``stored`` stored chunks, and the live ones.

    Args:
        stored: Chunks stored (ids ``0 .. stored - 1``).
        dead: The stored ids deleted (any order, repeats allowed).
    """

    def __init__(self, stored: int, dead: np.ndarray | None = None):
        self.stored = int(stored)
        self.dead = np.unique(np.asarray(dead if dead is not None else [], dtype=np.int64))
        if len(self.dead) and (self.dead[0] < 0 or self.dead[-1] >= self.stored):
            raise ValueError(
                f"deleted chunk ids must be in [0, {self.stored}), got "
                f"{self.dead[0]}..{self.dead[-1]}"
            )
        self._live: np.ndarray | None = None

    def __bool__(self) -> bool:
        return bool(len(self.dead))

    @property
    def num_live(self) -> int:
        """Chunks not deleted."""
        return self.stored - len(self.dead)

    @property
    def live(self) -> np.ndarray:
        """The stored ids of the live chunks, ascending (int64)."""
        if self._live is None:
            mask = np.ones(self.stored, dtype=bool)
            mask[self.dead] = False
            self._live = np.flatnonzero(mask)
        return self._live

    def grown(self, stored: int) -> Tombstones:
        """The same deletions over ``stored`` chunks (chunks appended after them are live)."""
        return Tombstones(stored, self.dead)

    def plus(self, ids: np.ndarray) -> Tombstones:
        """These deletions and ``ids``'."""
        return Tombstones(self.stored, np.concatenate([self.dead, np.asarray(ids, dtype=np.int64)]))

    def is_dead(self, ids: np.ndarray) -> np.ndarray:
        """Whether each stored id of ``ids`` is deleted (bool array)."""
        ids = np.asarray(ids, dtype=np.int64)
        if not len(self.dead):
            return np.zeros(len(ids), dtype=bool)
        at = np.minimum(np.searchsorted(self.dead, ids), len(self.dead) - 1)
        dead: np.ndarray = self.dead[at] == ids
        return dead

    def live_position(self, ids: np.ndarray) -> np.ndarray:
        """The place among the live chunks of each live stored id of ``ids`` (its id in a
        fresh build)."""
        ids = np.asarray(ids, dtype=np.int64)
        return ids - np.searchsorted(self.dead, ids)
