"""Web evidence from the Tavily search API, configured as in the SERC paper.

The paper verifies facts against Tavily's "advanced" search, keeping the top 8 results and at
most 20,000 characters of context; those are the defaults here.

The API key is read only from the `TAVILY_API_KEY` environment variable, never from an
argument: keys passed around as arguments end up in shell history, configs and tracebacks.
Nothing this module returns, logs or raises contains the key. Error messages are built from
status codes and scrubbed server details, and are raised outside the `except` block that saw
the HTTP library's exception, because that exception carries the request and its
`Authorization` header, and chaining it would keep the key reachable from our errors.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests
from tavily import TavilyClient
from tavily.errors import (
    BadRequestError,
    ForbiddenError,
    InvalidAPIKeyError,
    UsageLimitExceededError,
)
from tavily.errors import TimeoutError as TavilyTimeoutError
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from serc_dspy.core.errors import ArgumentError, UserError
from serc_dspy.core.trace import Passage
from serc_dspy.retrieval.base import (
    DEFAULT_CONTEXT_CHARS,
    DEFAULT_TOP_K,
    RetrievalError,
    cap_context,
)

logger = logging.getLogger(__name__)

TAVILY_KEY_ENV = "TAVILY_API_KEY"
MAX_RESULTS_LIMIT = 20
"""Tavily rejects `max_results` above 20, so larger `k` is clamped rather than failing."""

_REDACTED = "[redacted]"


class TavilyKeyError(UserError):
    """The Tavily API key is missing or was rejected; the user must fix TAVILY_API_KEY."""


class _Secret:
    """Holds the key so that `repr`, `vars()` and debuggers show a mask instead of it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def scrub(self, text: str) -> str:
        """`text` with every occurrence of the key masked, for server-supplied details."""
        return text.replace(self._value, _REDACTED)

    def __repr__(self) -> str:
        return _REDACTED


class _Retryable(Exception):
    """A failure worth another attempt (tenacity retries on it)."""


@dataclass(frozen=True)
class _Failure:
    """One failed attempt, already reduced to a key-free message."""

    message: str
    retryable: bool = False
    key_rejected: bool = False


def _read_key() -> _Secret:
    key = os.environ.get(TAVILY_KEY_ENV, "").strip()
    if not key:
        raise TavilyKeyError(
            f"Tavily web search needs an API key: set the {TAVILY_KEY_ENV} environment "
            "variable (get a key at https://app.tavily.com), or use a local corpus instead"
        )
    return _Secret(key)


class TavilyRetriever:
    """Tavily web search as a `Retriever`: `(query, k) -> list[Passage]`.

    Rate limits (HTTP 429), server errors (5xx), timeouts and connection failures are retried
    with exponential backoff (`backoff`, `2*backoff`, `4*backoff`, ... seconds), because a
    transient outage should not turn a whole check node into "no evidence". A rejected key or
    a bad request is not retried: repeating it cannot succeed and would burn credits.

    Check nodes call one retriever from many threads, and `requests.Session` is not
    documented as thread-safe, so each thread gets its own `TavilyClient`; pool threads are
    reused, so connections are still kept alive between queries.
    """

    def __init__(
        self,
        *,
        search_depth: str = "advanced",
        max_chars: int = DEFAULT_CONTEXT_CHARS,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        base_url: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if timeout <= 0:
            raise ArgumentError(f"timeout must be positive, got {timeout}")
        if max_retries < 0 or backoff < 0:
            raise ArgumentError(f"max_retries and backoff must not be negative, got "
                                f"{max_retries} and {backoff}")
        self._key = _read_key()
        self.search_depth = search_depth
        self.max_chars = max_chars
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.base_url = base_url.rstrip("/") if base_url else None
        self._sleep = sleep
        self._local = threading.local()
        self._clients: list[TavilyClient] = []
        self._clients_lock = threading.Lock()

    @property
    def name(self) -> str:
        return "tavily"

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"TavilyRetriever(search_depth={self.search_depth!r}{where})"

    def __call__(self, query: str, k: int = DEFAULT_TOP_K) -> list[Passage]:
        """The top `k` results as passages, best first, within `max_chars` of text in total."""
        if k <= 0:
            return []
        k = min(k, MAX_RESULTS_LIMIT)
        response = self._search_with_retries(query, k)
        return cap_context(self._passages(response)[:k], self.max_chars)

    def close(self) -> None:
        """Release the HTTP connections of every thread's client."""
        with self._clients_lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()
        self._local = threading.local()

    def _client(self) -> TavilyClient:
        client: TavilyClient | None = getattr(self._local, "client", None)
        if client is None:
            client = TavilyClient(api_key=self._key.reveal(), api_base_url=self.base_url)
            self._local.client = client
            with self._clients_lock:
                self._clients.append(client)
        return client

    def _search_with_retries(self, query: str, k: int) -> dict[str, Any]:
        """One search, retried by tenacity with exponential backoff on a retryable failure
        (a timeout, a 429 or 5xx); a rejected key or any other failure is raised at once."""
        attempts = self.max_retries + 1

        def search() -> dict[str, Any]:
            outcome = self._attempt(query, k)
            if not isinstance(outcome, _Failure):
                return outcome
            if outcome.key_rejected:
                raise TavilyKeyError(
                    f"Tavily rejected the API key in {TAVILY_KEY_ENV} ({outcome.message}); "
                    "check that it is valid and its plan has credits left"
                )
            if not outcome.retryable:
                raise RetrievalError(f"Tavily search failed: {outcome.message}")
            raise _Retryable(outcome.message)

        last = ""
        try:
            return Retrying(stop=stop_after_attempt(attempts),
                            wait=wait_exponential(multiplier=self.backoff, min=0, max=60),
                            retry=retry_if_exception_type(_Retryable), sleep=self._sleep,
                            before_sleep=lambda state: logger.debug(
                                "Tavily attempt %d/%d failed: %s", state.attempt_number,
                                attempts, state.outcome.exception()),
                            reraise=True)(search)
        except _Retryable as failure:
            last = str(failure)
        # raised outside the handler: no chained exception carries a response along
        raise RetrievalError(f"Tavily search failed after {attempts} attempts: {last}")

    def _attempt(self, query: str, k: int) -> dict[str, Any] | _Failure:
        """One request; every failure becomes a `_Failure` so no raw exception escapes."""
        try:
            return self._client().search(
                query, search_depth=self.search_depth, max_results=k, timeout=self.timeout
            )
        except Exception as exc:  # classified below; never re-raised
            return self._classify(exc)

    def _classify(self, exc: Exception) -> _Failure:
        detail = self._key.scrub(str(exc))
        if isinstance(exc, InvalidAPIKeyError | ForbiddenError):
            status = (
                "HTTP 401"
                if isinstance(exc, InvalidAPIKeyError)
                else "HTTP 403: forbidden or plan limit reached"
            )
            return _Failure(f"{status}: {detail}" if detail else status, key_rejected=True)
        if isinstance(exc, UsageLimitExceededError):
            return _Failure("rate limited (HTTP 429)", retryable=True)
        if isinstance(exc, TavilyTimeoutError):
            return _Failure(f"timed out after {self.timeout:g}s", retryable=True)
        if isinstance(exc, BadRequestError):
            return _Failure(f"bad request (HTTP 400): {detail}")
        if isinstance(exc, requests.HTTPError):
            status = exc.response.status_code if exc.response is not None else 0
            return _Failure(f"HTTP {status}", retryable=status >= 500)
        if isinstance(exc, requests.ConnectionError | requests.exceptions.ChunkedEncodingError):
            return _Failure(f"connection error: {detail}", retryable=True)
        if isinstance(exc, ValueError | AttributeError | TypeError):
            return _Failure(f"malformed response ({type(exc).__name__})")
        return _Failure(f"{type(exc).__name__}: {detail}")

    def _passages(self, response: Mapping[str, Any]) -> list[Passage]:
        results = response.get("results")
        if not isinstance(results, list):
            raise RetrievalError("Tavily response has no 'results' list")
        return [p for p in map(self._to_passage, results) if p.text]

    def _to_passage(self, result: Any) -> Passage:
        """Content becomes the text; the URL (else the title) tells a reader where it is from."""
        if not isinstance(result, Mapping):
            raise RetrievalError(f"Tavily result is a {type(result).__name__}, not an object")
        try:
            return Passage(
                text=str(result.get("content") or ""),
                source=str(result.get("url") or result.get("title") or ""),
                score=float(result.get("score") or 0.0),
            )
        except (TypeError, ValueError) as exc:
            raise RetrievalError(f"Tavily result has a bad field: {exc}") from None
