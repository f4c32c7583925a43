"""Throttling: a cap on in-flight calls, a token bucket for request rates, and backoff.

Unbounded concurrency against a rate-limited API (a hosted LM, Tavily) turns into a storm of
HTTP 429s. These pieces are shared by the server LM engine (`backends/chat.py`) and the
retrievers (`RateLimited`), and take an injectable clock so tests pin behaviour, not time.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from serc_dspy.core.errors import UserError

MIN_RATE = 1e-3
"""The slowest rate limit accepted (one request in about 17 minutes): anything slower is a
typo that would leave every call waiting past its deadline."""


def check_rate(rate: float, what: str = "a rate limit") -> float:
    """`rate` (requests per second) when it is a finite number of at least `MIN_RATE`."""
    try:
        value = float(rate)
    except (TypeError, ValueError):
        raise UserError(f"{what} must be a number of requests per second, got "
                        f"{rate!r}") from None
    if not math.isfinite(value) or value < MIN_RATE:
        raise UserError(f"{what} must be a finite number of requests per second of at least "
                        f"{MIN_RATE:g}, got {rate!r}")
    return value


class TokenBucket:
    """At most `rate` acquisitions per second on average, `burst` at once. Thread-safe."""

    def __init__(self, rate: float, burst: int = 1, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        check_rate(rate)
        if burst < 1:
            raise UserError(f"a rate limit needs burst >= 1 (got {burst})")
        self.rate, self.burst = float(rate), int(burst)
        self.clock, self.sleep = clock, sleep
        self.tokens = float(burst)
        self.updated = clock()
        self.lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, waiting if none is left; returns the seconds waited."""
        waited = 0.0
        while True:
            with self.lock:
                now = self.clock()
                self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
                self.updated = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return waited
                wait = (1 - self.tokens) / self.rate
            self.sleep(wait)
            waited += wait


class InFlightLimit:
    """A cap on concurrent calls (a bounded semaphore that also reports its peak)."""

    def __init__(self, limit: int):
        if limit < 1:
            raise UserError(f"max in-flight calls must be at least 1, got {limit}")
        self.limit = limit
        self._semaphore = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self.now = self.peak = 0

    def __enter__(self) -> InFlightLimit:
        self._semaphore.acquire()
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self.now -= 1
        self._semaphore.release()


def backoff_delay(attempt: int, base: float, retry_after: str | None = None,
                  cap: float = 60.0) -> float:
    """Seconds to wait before retry `attempt` (1, 2, ...): the server's `Retry-After` when it
    gives one in seconds, else `base * 2**(attempt-1)`, never more than `cap`."""
    if retry_after:
        try:
            return min(cap, max(0.0, float(retry_after)))
        except ValueError:
            pass  # an HTTP date: fall back to exponential backoff
    return min(cap, base * 2 ** (attempt - 1))


class RateLimited:
    """A retriever that makes at most `per_second` searches per second (`burst` at once)."""

    def __init__(self, retriever: Any, per_second: float, burst: int = 1, **clock: Any):
        self.retriever = retriever
        self.bucket = TokenBucket(per_second, burst, **clock)
        self.name = getattr(retriever, "name", type(retriever).__name__)

    def __call__(self, query: str, k: int):
        self.bucket.acquire()
        return self.retriever(query, k)

    def __deepcopy__(self, memo) -> RateLimited:
        return self  # one rate for every copy of a program

    def __getstate__(self) -> dict[str, Any]:
        return {"retriever": self.retriever, "rate": self.bucket.rate,
                "burst": self.bucket.burst}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["retriever"], state["rate"], state["burst"])
