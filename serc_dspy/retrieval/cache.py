"""An on-disk cache in front of any retriever, so re-running SERC does not repeat searches.

Web searches cost money and time, and re-running an evaluation or debugging a prompt asks the
same verification queries again. Results are stored in a diskcache directory (SQLite in WAL
mode underneath, safe across threads and processes) keyed by `(retriever name, query, k)`; the
name is part of the key so one cache can serve several backends without mixing their
evidence, and is the entry's tag so `clear()` forgets one backend's entries only.

Check nodes query concurrently from a thread pool, and identical queries are common (the
same fact checked in several answers), so concurrent misses on one key are collapsed into a
single call of the wrapped retriever. Two processes may both search on a simultaneous miss,
but the first stored result wins (`Cache.add`) and both return it. Nothing is ever evicted,
and failures are never stored: an outage must not become a permanent "no evidence".
"""

from __future__ import annotations

import copy
import inspect
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import diskcache

from serc_dspy.core.errors import UserError
from serc_dspy.core.trace import Passage
from serc_dspy.retrieval.base import DEFAULT_TOP_K, RetrievalError, Retriever, as_retriever

CacheKey = tuple[str, str, int]
"""(retriever name, with its corpus's content hash where it has one; query; k)."""

_BUSY_TIMEOUT_S = 30.0


class CacheError(UserError):
    """The cache directory cannot be opened or created; usually a bad path or permissions."""


class _KeyLocks:
    """One lock per key, created on demand and dropped when nobody holds or awaits it.

    A lock per key (rather than one for the whole cache) lets different queries miss and
    search in parallel while callers of the same query wait for the first one's result.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[CacheKey, tuple[threading.Lock, int]] = {}

    @contextmanager
    def hold(self, key: CacheKey) -> Iterator[None]:
        with self._guard:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[key]
                if users == 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)


def _default_name(retriever: Any) -> str:
    """The wrapped retriever's `name`, else a function's `__name__`, else its class name."""
    return str(
        getattr(retriever, "name", None)
        or getattr(retriever, "__name__", None)
        or type(retriever).__name__
    )


def _encode(passages: list[Passage]) -> str:
    return json.dumps([p.model_dump() for p in passages], ensure_ascii=False)


def _decode(text: str) -> list[Passage] | None:
    """Stored passages, or None when the row is unreadable (then it is fetched again)."""
    try:
        return [Passage.model_validate(item) for item in json.loads(text)]
    except (ValueError, TypeError):
        return None


class CachedRetriever:
    """Wraps a retriever with a persistent diskcache; itself a `Retriever`.

    `path` is the cache's directory. `hits` and `misses` count calls answered from the cache
    and calls that reached the wrapped retriever successfully. With `enabled=False` every call
    passes straight through and nothing is touched, so callers can keep one code path for
    `--no-cache`. Each call returns fresh `Passage` objects (entries are stored as JSON), so
    mutating a result cannot alter the cache.
    """

    def __init__(
        self,
        retriever: Retriever,
        path: str | os.PathLike[str],
        *,
        retriever_name: str | None = None,
        enabled: bool = True,
    ) -> None:
        self.retriever_name = retriever_name or _default_name(retriever)
        # anything `SERC(retriever=...)` accepts: a plain `(query, k)` function too
        self.retriever = as_retriever(retriever) if inspect.isroutine(retriever) else retriever
        self.path = Path(path)
        self.enabled = enabled
        self.content_sha256: str | None = getattr(self.retriever, "content_sha256", None)
        """The wrapped corpus's content hash: part of every key, so an edited corpus under the
        same name never reads the old corpus's evidence (and a resumed run's meta checks it)."""
        self.hits = 0
        self.misses = 0
        self._reset_handles()
        if enabled:
            self._store_handle()  # fail at construction, not mid-run, if the path is unusable

    def _reset_handles(self) -> None:
        """Locks and the open cache belong to one process and object: copies and pickles get
        fresh ones, and reopen the directory lazily."""
        self._counts_lock = threading.Lock()
        self._key_locks = _KeyLocks()
        self._open_lock = threading.Lock()
        self._cache: diskcache.Cache | None = None

    _HANDLES = ("_counts_lock", "_key_locks", "_open_lock", "_cache")

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in self._HANDLES}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset_handles()

    def __deepcopy__(self, memo) -> CachedRetriever:
        clone = type(self).__new__(type(self))
        clone.__setstate__({**self.__getstate__(),
                            "retriever": copy.deepcopy(self.retriever, memo)})
        return clone

    @property
    def name(self) -> str:
        return self.retriever_name

    def __repr__(self) -> str:
        state = "" if self.enabled else ", enabled=False"
        return f"CachedRetriever({self.retriever!r}, path={str(self.path)!r}{state})"

    def __call__(self, query: str, k: int = DEFAULT_TOP_K) -> list[Passage]:
        if not self.enabled:
            return self.retriever(query, k)
        name = self.retriever_name
        key = (f"{name}@{self.content_sha256}" if self.content_sha256 else name, query, k)
        cached = self._load(key)
        if cached is None:
            with self._key_locks.hold(key):
                cached = self._load(key)  # another thread may have fetched it meanwhile
                if cached is None:
                    passages = self._fetch(query, k)
                    self._count(miss=True)
                    # An empty result may be an upstream outage that recovers: never cache it.
                    return self._store(key, passages) if passages else passages
        self._count(miss=False)
        return cached

    def clear(self) -> int:
        """Forget this retriever's cached results (other names in the cache are kept).

        Returns the number of entries removed.
        """
        return self._store_handle().evict(self.retriever_name, retry=True)

    def close(self) -> None:
        """Close the cache; later calls reopen it as needed."""
        with self._open_lock:
            cache, self._cache = self._cache, None
        if cache is not None:
            cache.close()

    def _fetch(self, query: str, k: int) -> list[Passage]:
        passages = self.retriever(query, k)
        if not isinstance(passages, list) or not all(isinstance(p, Passage) for p in passages):
            raise RetrievalError(
                f"retriever {self.retriever_name} did not return a list of Passage; "
                "wrap plain functions with as_retriever before caching them"
            )
        return passages

    def _count(self, *, miss: bool) -> None:
        with self._counts_lock:
            if miss:
                self.misses += 1
            else:
                self.hits += 1

    def _load(self, key: CacheKey) -> list[Passage] | None:
        cache = self._store_handle()
        stored = cache.get(key, retry=True)
        if stored is None:
            return None
        passages = _decode(stored)
        if passages is None:  # unreadable: forget it, so it is fetched again
            cache.delete(key, retry=True)
        return passages

    def _store(self, key: CacheKey, passages: list[Passage]) -> list[Passage]:
        """Add unless another process got there first; return whatever is stored.

        First writer wins so that every process ends up using the same evidence for a key.
        """
        self._store_handle().add(key, _encode(passages), tag=self.retriever_name, retry=True)
        stored = self._load(key)
        return stored if stored is not None else [p.model_copy() for p in passages]

    def _store_handle(self) -> diskcache.Cache:
        """The open cache (diskcache is thread-safe: one handle serves every thread)."""
        with self._open_lock:
            if self._cache is None:
                if self.path.is_file():
                    raise CacheError(
                        f"cannot open retrieval cache {self.path}: it is a file, and the cache "
                        "is a directory (the single SQLite file of earlier releases is not "
                        "read); give a directory path")
                try:
                    self._cache = diskcache.Cache(
                        str(self.path), timeout=_BUSY_TIMEOUT_S, eviction_policy="none")
                except (OSError, sqlite3.Error) as exc:
                    raise CacheError(f"cannot open retrieval cache {self.path}: {exc}") from exc
            return self._cache
