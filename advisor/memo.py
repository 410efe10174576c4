"""One bounded memo for the pure functions of immutable objects that a run asks for again and again
(a catalog entry's shapes and prices, a profile's software resolution, a workload's counts and
estimates on an entry).

An entry is keyed by the identities of the objects it was computed from plus any plain values, and
holds those objects, so that an identity is never reused while its entry lives (a hit is also
checked object by object). A full memo is cleared, not evicted piecemeal: the working set of one
run is far below the bound, which only caps a long batch.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class IdentityMemo(Generic[T]):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: dict[tuple[tuple[int, ...], Hashable], tuple[tuple[Any, ...], T]] = {}

    def get(self, objects: tuple[Any, ...], key: Hashable, compute: Callable[[], T], *, limit: int | None = None) -> T:
        """``compute()`` for ``objects`` (by identity) and ``key`` (by value), once while it is kept;
        ``limit``: the bound to apply now (default the memo's)."""
        full = (tuple([id(o) for o in objects]) if len(objects) > 1 else (id(objects[0]),), key)
        hit = self._entries.get(full)
        if hit is not None:
            held = hit[0]
            if held[0] is objects[0] and (len(objects) == 1 or all(a is b for a, b in zip(held, objects, strict=True))):
                return hit[1]
        value = compute()
        if len(self._entries) >= (self.limit if limit is None else limit):
            self._entries.clear()
        self._entries[full] = (objects, value)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
