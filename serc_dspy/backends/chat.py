"""The engines that send the one chat-completions request (`chat_format`) to a model.

- `ChatEngine`: the sync engine base; a subclass only says how to `send(body) -> dict`.
  `backends/embedded.py` sends in-process to llama.cpp's own server (xllamacpp);
- `HttpChatEngine`: any OpenAI-compatible server over HTTP (SGLang, its router, vLLM,
  llama.cpp) through one pooled httpx client, throttled, retried on 429/503, spread over
  several endpoints, and careful with the API key (read at call time, never stored or
  echoed);
- `ThreadedAsyncEngine`: the async half DSPy wants beside a custom engine, running the sync
  call on a wide thread pool of its own.

The request and reply format lives in `chat_format` (re-exported here, where callers have
always found it). The engine classes stay in this module: DSPy saves an LM's engine by its
import path (`serc_dspy.backends.chat:HttpChatEngine`), so a saved program keeps loading.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import hashlib
import json
import os
import threading
import time
from typing import Any

import httpx
from dspy import lm15
from dspy.lm15 import Response
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from serc_dspy.backends.chat_format import (
    API_KEY_ENV,
    CHARS_PER_TOKEN,
    DEFAULT_MAX_LIST_ITEMS,
    DEFAULT_MAX_TOKENS,
    LMKeyRejected,
    OutputMalformed,
    OutputTruncated,
    bound_lists,
    bound_strings,
    chat_messages,
    chat_request,
    chat_response,
    refuse_incomplete_json,
    refuse_strings_at_their_bound,
    requested_schema,
    stream_events,
)
from serc_dspy.core.errors import UserError, redact
from serc_dspy.runtime.throttle import InFlightLimit, TokenBucket, backoff_delay

__all__ = [
    "API_KEY_ENV", "CHARS_PER_TOKEN", "DEFAULT_MAX_LIST_ITEMS", "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT_S", "ENGINE_THREADS", "AsyncHttpChatEngine", "BackendError", "ChatEngine",
    "HttpChatEngine", "LMKeyRejected", "OutputMalformed", "OutputTruncated",
    "ThreadedAsyncEngine", "bound_lists", "bound_strings", "chat_messages", "chat_request",
    "chat_response", "in_engine_thread", "requested_schema", "stream_events",
]

# Seconds per server call: ample for a GPU server, short enough to give up on a hung one.
DEFAULT_TIMEOUT_S = 120.0


class BackendError(UserError):
    """An LM backend cannot be built or used; the message says what to install or pass."""


class ChatEngine:
    """A DSPy engine that sends `chat_request` bodies through `send(body) -> dict`."""

    supports_response_schema = True
    supported_params = frozenset({"response_format", "temperature", "max_tokens", "stop", "seed",
                                  "logprobs"})

    name = "chat"
    max_list_items = DEFAULT_MAX_LIST_ITEMS
    request_model: str | None = None

    def send(self, body: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def complete(self, request) -> Response:
        body = chat_request(request, model=self.request_model,
                            max_list_items=self.max_list_items)
        response = chat_response(self.send(body), self.name)
        refuse_incomplete_json(body, response.message.text or "", self.name)
        refuse_strings_at_their_bound(body, response.message.text or "", self.name)
        return response

    def stream(self, request):
        """DSPy's streaming interface (`dspy.streamify`): the checked response as stream
        events once it is complete (one text delta), never a half-parsed one."""
        return stream_events(self.complete(request))

    def close(self) -> None:
        pass


ENGINE_THREADS = 64
"""Threads for blocking engine calls. `asyncio.to_thread` would use the loop's default pool,
`min(32, cores + 4)` threads: 6 on a 2-core client, which would cap every run at 6 requests
in flight whatever the server's slots or `max_workers`."""
_ENGINE_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_ENGINE_POOL_LOCK = threading.Lock()


async def in_engine_thread(fn, *args):
    """`fn(*args)` on the engine pool, in a copy of the caller's context."""
    global _ENGINE_POOL
    with _ENGINE_POOL_LOCK:
        if _ENGINE_POOL is None:
            _ENGINE_POOL = concurrent.futures.ThreadPoolExecutor(
                max_workers=ENGINE_THREADS, thread_name_prefix="serc-engine")
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        _ENGINE_POOL, functools.partial(context.run, fn, *args))


class ThreadedAsyncEngine:
    """The async half DSPy requires next to a custom engine: it runs the sync engine's call in
    a thread of the engine pool. Subclasses name their sync engine so a saved LM state can
    rebuild the pair."""

    sync_class: type = type(None)

    def __init__(self, sync):
        self.sync = sync

    async def complete(self, request) -> Response:
        return await in_engine_thread(self.sync.complete, request)

    async def stream(self, request):
        for event in stream_events(await self.complete(request)):
            yield event

    async def aclose(self) -> None:
        self.sync.close()

    def dump_state(self) -> dict[str, Any]:
        return self.sync.dump_state()

    @classmethod
    def load_state(cls, state: dict[str, Any]):
        return cls(cls.sync_class.load_state(state))


class HttpChatEngine(ChatEngine):
    """An OpenAI-compatible server at `url` (ending in /v1) serving `model`.

    `url` may list several endpoints serving the same model, comma-separated (several SGLang
    workers without a router, say): each request goes to the endpoint with the fewest requests
    in flight, ties broken round-robin, so every worker's slots fill. The API key comes from
    `SERC_LM_API_KEY` at call time; it is never stored in the engine's state, a trace or an
    error message.
    """

    def __init__(self, kind: str, url: str, model: str, *, timeout: float = DEFAULT_TIMEOUT_S,
                 max_list_items: int = DEFAULT_MAX_LIST_ITEMS, max_in_flight: int | None = None,
                 rate: float | None = None, max_retries: int = 3, backoff: float = 1.0,
                 sleep=time.sleep):
        urls = [u.strip().rstrip("/") for u in url.split(",")]
        for one in urls:
            if not one.startswith(("http://", "https://")):
                raise BackendError(f"server URL must start with http:// or https://, got "
                                   f"{one!r}")
        if not model:
            raise BackendError("a server LM needs a model name (the one the server serves)")
        self.kind, self.urls, self.request_model = kind, urls, model
        self.url = ",".join(urls)
        self.in_flight_at = dict.fromkeys(urls, 0)
        self.sent_to = dict.fromkeys(urls, 0)
        self._turn = 0
        self._pick_lock = threading.Lock()
        self.timeout = timeout
        self.max_list_items = max_list_items
        self.name = f"{kind}/{model}"
        self.max_in_flight, self.rate = max_in_flight, rate
        self.max_retries, self.backoff, self._sleep = max_retries, backoff, sleep
        self.in_flight = InFlightLimit(max_in_flight) if max_in_flight else None
        self.bucket = TokenBucket(rate, burst=max(1, max_in_flight or 1), sleep=sleep) \
            if rate else None
        # Fingerprints (never the key itself) of the key the server last answered, and of a
        # key it rejected, with the rejection's message and status.
        self._key_gate = threading.Lock()
        self._key_answered: str | None = None
        self._key_rejected: tuple[str, str, int | None] | None = None
        self._http: httpx.Client | None = None  # opened at the first request, kept alive

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One request, throttled (`max_in_flight`, `rate` requests per second) and retried
        with backoff on HTTP 429 and 503 (the server's `Retry-After` when it sends one).

        Until the server has answered one request with the current key, requests go one at a
        time: a rejected key (HTTP 401 or 403) then costs one request, not one per worker, and
        every later call with that key raises `LMKeyRejected` without sending anything."""
        key = _fingerprint(os.environ.get(API_KEY_ENV))
        if self._key_answered != key:
            with self._key_gate:
                if self._key_answered != key:  # the first request with this key
                    return self._send_with(key, body)
        return self._send_with(key, body)

    def _send_with(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        rejected = self._key_rejected
        if rejected is not None and rejected[0] == key:
            raise LMKeyRejected(rejected[1], status=rejected[2])
        try:
            reply = self._send_retrying(body)
        except LMKeyRejected as exc:
            self._key_rejected, self._key_answered = (key, str(exc), exc.status), None
            raise
        except Exception:
            self._key_answered = key  # not a rejection: the other requests may go
            raise
        self._key_answered = key
        return reply

    def _send_retrying(self, body: dict[str, Any]) -> dict[str, Any]:
        """`_send_once`, retried by tenacity on HTTP 429 / 503 only, after the server's
        `Retry-After` or an exponential backoff; the last busy reply's error when retries run
        out."""
        def wait(state: RetryCallState) -> float:
            busy = state.outcome.exception()
            return backoff_delay(state.attempt_number, self.backoff, busy.retry_after)

        def send() -> dict[str, Any]:
            if self.bucket is not None:
                self.bucket.acquire()
            if self.in_flight is None:
                return self._send_once(body)
            with self.in_flight:
                return self._send_once(body)

        try:
            return Retrying(stop=stop_after_attempt(self.max_retries + 1), wait=wait,
                            retry=retry_if_exception_type(_Busy), sleep=self._sleep,
                            reraise=True)(send)
        except _Busy as busy:
            raise busy.error from None

    def _pick(self) -> str:
        """The endpoint with the fewest requests in flight (round-robin among equals)."""
        with self._pick_lock:
            n = len(self.urls)
            order = [self.urls[(self._turn + i) % n] for i in range(n)]
            chosen = min(order, key=lambda u: self.in_flight_at[u])
            self._turn = (self.urls.index(chosen) + 1) % n
            self.in_flight_at[chosen] += 1
            self.sent_to[chosen] += 1
            return chosen

    def _send_once(self, body: dict[str, Any]) -> dict[str, Any]:
        url = self._pick()
        try:
            return self._post(url, body)
        finally:
            with self._pick_lock:
                self.in_flight_at[url] -= 1

    def _client(self) -> httpx.Client:
        """One pooled httpx client for every thread of this engine (httpx's `Client` is
        thread-safe): keep-alive connections to each endpoint instead of one per request."""
        with self._pick_lock:
            if self._http is None:
                self._http = httpx.Client(timeout=self.timeout, limits=httpx.Limits(
                    max_connections=None, max_keepalive_connections=ENGINE_THREADS))
            return self._http

    def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(API_KEY_ENV)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            reply = self._client().post(f"{url}/chat/completions", headers=headers,
                                        content=json.dumps(body).encode("utf-8"))
        except httpx.TransportError as exc:  # refused, reset, timed out, a bad scheme
            reason = redact(str(exc) or type(exc).__name__)
            raise lm15.TransportError(f"{self.name}: cannot reach {url}: {reason}") from None
        if reply.status_code >= 400:
            # Redacted before it is cut: a cut inside an echoed key would leave a prefix that
            # no longer matches the key.
            detail = redact(reply.text)[:300]
            code = reply.status_code
            if code in (401, 403):
                raise LMKeyRejected(f"{self.name}: the server rejected the API key (HTTP "
                                    f"{code}): {detail}; check {API_KEY_ENV}",
                                    status=code) from None
            if code in (429, 503):
                raise _Busy(lm15.RateLimitError(f"{self.name}: HTTP {code}: {detail}",
                                                status=code),
                            reply.headers.get("Retry-After")) from None
            kind = lm15.ServerError if code >= 500 else lm15.InvalidRequestError
            raise kind(f"{self.name}: HTTP {code}: {detail}", status=code) from None
        try:
            return reply.json()
        except ValueError as exc:
            raise lm15.ServerError(f"{self.name}: the server's reply is not JSON ({exc})") from None

    def close(self) -> None:
        """Close the pooled connections; a later request opens new ones."""
        with self._pick_lock:
            http, self._http = self._http, None
        if http is not None:
            http.close()

    def dump_state(self) -> dict[str, Any]:
        return {"kind": self.kind, "url": self.url, "model": self.request_model,
                "timeout": self.timeout, "max_list_items": self.max_list_items,
                "max_in_flight": self.max_in_flight, "rate": self.rate,
                "max_retries": self.max_retries, "backoff": self.backoff}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> HttpChatEngine:
        return cls(state["kind"], state["url"], state["model"],
                   timeout=state.get("timeout", DEFAULT_TIMEOUT_S),
                   max_list_items=state.get("max_list_items", DEFAULT_MAX_LIST_ITEMS),
                   max_in_flight=state.get("max_in_flight"), rate=state.get("rate"),
                   max_retries=state.get("max_retries", 3),
                   backoff=state.get("backoff", 1.0))


def _fingerprint(key: str | None) -> str:
    """A key's SHA-256, so an engine can recognise a rejected key without holding it."""
    return hashlib.sha256((key or "").encode("utf-8")).hexdigest()


class _Busy(Exception):
    """HTTP 429 / 503: retried after a backoff; `error` is raised when retries run out."""

    def __init__(self, error: Exception, retry_after: str | None):
        super().__init__(str(error))
        self.error, self.retry_after = error, retry_after


class AsyncHttpChatEngine(ThreadedAsyncEngine):
    sync_class = HttpChatEngine
