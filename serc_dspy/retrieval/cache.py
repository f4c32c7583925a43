"""An on-disk cache in front of any retriever, so re-running SERC does not repeat searches.

Web searches cost money and time, and re-running an evaluation or debugging a prompt asks the
same verification queries again. Results are stored in one SQLite file keyed by
`(retriever name, query, k)`; the name is part of the key so one file can serve several
backends without mixing their evidence.

Check nodes query concurrently from a thread pool, and identical queries are common (the
same fact checked in several answers), so concurrent misses on one key are collapsed into a
single call of the wrapped retriever. Across processes SQLite's locking keeps the file
consistent (WAL mode lets readers proceed while one process writes); two processes may both
search on a simultaneous miss, but the first stored result wins and both return it.
Failures are never stored: an outage must not become a permanent "no evidence".
"""

from __future__ import annotations

import copy
import inspect
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from serc_dspy.errors import UserError
from serc_dspy.retrieval.base import DEFAULT_TOP_K, RetrievalError, Retriever, as_retriever
from serc_dspy.trace import Passage

CacheKey = tuple[str, str, int]
"""(retriever name, query, k)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS retrievals (
    retriever TEXT NOT NULL,
    query TEXT NOT NULL,
    k INTEGER NOT NULL,
    passages TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (retriever, query, k)
)
"""
_BUSY_TIMEOUT_S = 30.0


class CacheError(UserError):
    """The cache file cannot be opened or created; usually a bad path or permissions."""


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
    """Wraps a retriever with a persistent SQLite cache; itself a `Retriever`.

    `hits` and `misses` count calls answered from the cache and calls that reached the
    wrapped retriever successfully. With `enabled=False` every call passes straight through
    and the file is not touched, so callers can keep one code path for `--no-cache`.
    Each call returns fresh `Passage` objects, so mutating a result cannot alter the cache.
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
        self.hits = 0
        self.misses = 0
        self._reset_handles()
        if enabled:
            self._db()  # fail at construction, not mid-run, if the path is unusable

    def _reset_handles(self) -> None:
        """Locks and SQLite connections belong to one process and object: copies and pickles
        get fresh ones, and reopen the file lazily."""
        self._counts_lock = threading.Lock()
        self._key_locks = _KeyLocks()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._ready = False

    _HANDLES = ("_counts_lock", "_key_locks", "_local", "_connections", "_connections_lock",
                "_ready")

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
        key = (self.retriever_name, query, k)
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
        """Forget this retriever's cached results (other names in the file are kept).

        Returns the number of entries removed.
        """
        cursor = self._db().execute(
            "DELETE FROM retrievals WHERE retriever = ?", (self.retriever_name,)
        )
        return max(cursor.rowcount, 0)

    def close(self) -> None:
        """Close every thread's connection; later calls reopen the file as needed."""
        with self._connections_lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()
        self._local = threading.local()

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
        db = self._db()
        where = "retriever = ? AND query = ? AND k = ?"
        row = db.execute(f"SELECT passages FROM retrievals WHERE {where}", key).fetchone()
        if row is None:
            return None
        passages = _decode(row[0])
        if passages is None:
            db.execute(f"DELETE FROM retrievals WHERE {where}", key)
        return passages

    def _store(self, key: CacheKey, passages: list[Passage]) -> list[Passage]:
        """Insert unless another process got there first; return whatever is stored.

        First writer wins so that every process ends up using the same evidence for a key.
        """
        self._db().execute(
            "INSERT OR IGNORE INTO retrievals (retriever, query, k, passages, created) "
            "VALUES (?, ?, ?, ?, ?)",
            (*key, _encode(passages), time.time()),
        )
        stored = self._load(key)
        return stored if stored is not None else [p.model_copy() for p in passages]

    def _db(self) -> sqlite3.Connection:
        """This thread's connection; SQLite connections must not be shared across threads."""
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._connect()
            self._local.connection = connection
            with self._connections_lock:
                self._connections.append(connection)
        return connection

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                self.path,
                timeout=_BUSY_TIMEOUT_S,
                isolation_level=None,  # autocommit: every statement is its own transaction
                check_same_thread=False,  # only so close() can close other threads' handles
            )
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(f"cannot open retrieval cache {self.path}: {exc}") from exc
        try:
            self._prepare(connection)
        except sqlite3.Error as exc:
            connection.close()
            raise CacheError(f"cannot open retrieval cache {self.path}: {exc}") from exc
        return connection

    def _prepare(self, connection: sqlite3.Connection) -> None:
        """Create the table and switch to WAL once per instance; both persist in the file."""
        with self._connections_lock:
            if not self._ready:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(_SCHEMA)
                self._ready = True
        connection.execute("PRAGMA synchronous=NORMAL")
