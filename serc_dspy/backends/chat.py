"""The one OpenAI chat-completions request every backend sends, and the engines that send it.

DSPy 3.4 hands an engine one canonical `lm15.Request`. `chat_request` turns it into the body of
an OpenAI `/v1/chat/completions` call: messages, `max_tokens` (not the `max_completion_tokens`
some servers ignore), temperature, stop words and, for typed outputs, `response_format` of type
`json_schema` with the signature's schema (arrays bounded, so a small model cannot loop on list
items until it runs out of tokens). `chat_response` reads the answer back, and refuses a
truncated one (`finish_reason == "length"`): cut-off JSON "repaired" by a parser would silently
lose the rest of a rewrite or a polish.

Two transports share that code:
- `ChatEngine` + `send` of `backends/embedded.py`: llama.cpp's own server in-process (xllamacpp);
- `HttpChatEngine`: any OpenAI-compatible server over HTTP (SGLang, its router, vLLM, llama.cpp).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import copy
import functools
import hashlib
import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from dspy import lm15
from dspy._vendor.lm15.types import StreamDeltaEvent, TextDelta
from dspy.lm15 import Message, Response, TextPart, Usage, response_to_events
from dspy.utils.exceptions import LMAuthError

from serc_dspy.errors import KeyRejected, MalformedOutput, StepFailed, UserError, redact
from serc_dspy.throttle import InFlightLimit, TokenBucket, backoff_delay

DEFAULT_MAX_TOKENS = 512
# A small model under a schema can repeat list items until it runs out of tokens; a bound on
# list length keeps every answer short enough to close its JSON.
DEFAULT_MAX_LIST_ITEMS = 12
# Seconds per server call: ample for a GPU server, short enough to give up on a hung one.
DEFAULT_TIMEOUT_S = 120.0
API_KEY_ENV = "SERC_LM_API_KEY"


class BackendError(UserError):
    """An LM backend cannot be built or used; the message says what to install or pass."""


class LMKeyRejected(KeyRejected, LMAuthError):
    """The server rejected the API key (HTTP 401 or 403): a configuration error that aborts a
    run (CLI exit 2), with its message redacted. Also a DSPy `LMAuthError`, which DSPy passes
    through unchanged."""

    def __init__(self, message: str, *, status: int | None = None):
        LMAuthError.__init__(self, redact(message), status=status)


class OutputTruncated(StepFailed):
    """The model hit `max_tokens` before finishing: the output is incomplete and is not used."""


class OutputMalformed(MalformedOutput):
    """A reply asked to follow a JSON schema is not one complete JSON object with the schema's
    required fields, whatever its finish reason said: a fragment is never repaired into an
    answer."""


def requested_schema(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """The JSON schema a request asks its output to follow, or None for free text.

    DSPy sends `{"type": "json_schema", "schema": ...}` (or OpenAI's nested `json_schema`);
    plain JSON mode becomes the schema of any object.
    """
    if not response_format or response_format.get("type") == "text":
        return None
    schema = response_format.get("schema")
    if schema is None and isinstance(response_format.get("json_schema"), dict):
        schema = response_format["json_schema"].get("schema")
    return schema if schema is not None else {"type": "object"}


def bound_lists(schema: dict[str, Any], max_items: int, min_items: int = 0) -> dict[str, Any]:
    """Return a copy of a JSON schema whose unbounded arrays get `maxItems` (and `minItems`)."""
    schema = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "array" and "maxItems" not in node:
                node["maxItems"] = max_items
            if node.get("type") == "array" and min_items and "minItems" not in node:
                node["minItems"] = min_items
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema


# Characters per token a string may use of the output budget (English runs at about 4).
CHARS_PER_TOKEN = 2


def bound_strings(schema: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """Give the schema's top-level free-text fields a `maxLength` that shares the token budget.

    A small model fills an unbounded string until `max_tokens` (SmolLM2 does on most calls), so
    the JSON never closes and the call is lost. With the bound the grammar closes the string in
    time; a string that reaches its bound counts as cut off (see `ChatEngine.complete`).
    """
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    free = [name for name, sub in properties.items() if isinstance(sub, dict)
            and sub.get("type") == "string" and "enum" not in sub and "maxLength" not in sub]
    if not free:
        return schema
    schema = copy.deepcopy(schema)
    limit = max(64, CHARS_PER_TOKEN * max_tokens // len(free))
    for name in free:
        schema["properties"][name]["maxLength"] = limit
    return schema


def chat_messages(request) -> list[dict[str, str]]:
    """The request's system prompt and turns as OpenAI chat messages."""
    messages = []
    if request.system is not None:
        system = request.system
        if not isinstance(system, str):
            system = "".join(getattr(part, "text", "") or "" for part in system)
        messages.append({"role": "system", "content": system})
    messages.extend({"role": m.role, "content": m.text or ""} for m in request.messages)
    return messages


def chat_request(request, *, model: str | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
                 max_list_items: int = DEFAULT_MAX_LIST_ITEMS) -> dict[str, Any]:
    """The OpenAI chat-completions body for one DSPy request (the only place it is built)."""
    config = request.config
    body: dict[str, Any] = {
        "messages": chat_messages(request),
        "max_tokens": int(config.max_tokens or max_tokens),
        "temperature": 0.0 if config.temperature is None else float(config.temperature),
    }
    if model is not None:
        body["model"] = model
    if config.stop:
        body["stop"] = list(config.stop)
    if config.seed is not None:
        body["seed"] = int(config.seed)
    schema = requested_schema(config.response_format)
    if schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "output", "strict": True,
                            "schema": bound_strings(bound_lists(schema, max_list_items),
                                                    body["max_tokens"])},
        }
    return body


def chat_response(payload: dict[str, Any], model: str) -> Response:
    """An OpenAI chat-completions reply as a DSPy response; a truncated reply raises."""
    if "error" in payload:
        error = payload["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        status = _status(error)
        if status in (401, 403):
            raise LMKeyRejected(f"{model}: the server rejected the API key (HTTP {status}): "
                                f"{message}; check {API_KEY_ENV}", status=status)
        raise lm15.ServerError(redact(f"{model}: {message}"), status=status)
    try:
        choice = payload["choices"][0]
        content = choice["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise lm15.ServerError(f"{model}: malformed chat completion ({exc})") from exc
    usage = payload.get("usage") or {}
    if choice.get("finish_reason") == "length":
        raise OutputTruncated(
            f"{model} stopped at max_tokens after {usage.get('completion_tokens', '?')} tokens; "
            "the incomplete output was discarded")
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    return Response(
        id=payload.get("id"),
        model=model,
        message=Message.assistant([TextPart(content)]),
        finish_reason="stop",
        usage=Usage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            total_tokens=int(usage.get("total_tokens") or 0),
            cache_read_tokens=int(cached) if cached is not None else None,
        ),
    )


def _refuse_incomplete_json(body: dict[str, Any], content: str, model: str) -> None:
    """A schema-bound reply must be one complete JSON object holding the schema's required
    fields; `finish_reason == "stop"` alone does not make a cut-off reply complete."""
    from serc_dspy.adapter import strict_json_object

    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
    if not schema:
        return
    value = strict_json_object(content)
    if value is None:
        raise OutputMalformed(f"{model}: the reply is not one complete JSON object "
                              f"({len(content)} characters, ends {content[-40:]!r}); "
                              "it was discarded, not repaired")
    missing = [name for name in schema.get("required") or [] if name not in value]
    if missing:
        raise OutputMalformed(f"{model}: the reply lacks the required field(s) "
                              f"{', '.join(missing)}; it was discarded")


def _refuse_strings_at_their_bound(body: dict[str, Any], content: str, model: str) -> None:
    """A free-text field that filled its whole `maxLength` was cut by the grammar, not
    finished by the model: as loud as a reply cut at `max_tokens`."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    limits = {name: sub["maxLength"] for name, sub in (schema.get("properties") or {}).items()
              if isinstance(sub, dict) and "maxLength" in sub}
    if not limits:
        return
    try:
        values = json.loads(content)
    except ValueError:
        return  # the adapter reports unparseable output itself
    for name, limit in limits.items():
        value = values.get(name) if isinstance(values, dict) else None
        if isinstance(value, str) and len(value) >= limit:
            raise OutputTruncated(f"{model}: field {name!r} reached its {limit}-character bound "
                                  "(the output budget); the incomplete output was discarded")


def _status(error: Any) -> int | None:
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) else None


_PIECE = re.compile(r"\S+\s*|\s+")


def stream_events(response: Response):
    """A finished response as stream events, its text cut into word-sized deltas.

    DSPy's stream listeners find a field's start and end markers across chunks; a whole reply
    in one delta never shows them as separate chunks, and no field would ever be streamed.
    """
    for event in response_to_events(response):
        delta = getattr(event, "delta", None)
        if not isinstance(delta, TextDelta) or not delta.text:
            yield event
            continue
        for number, piece in enumerate(_PIECE.findall(delta.text)):
            yield StreamDeltaEvent(delta=TextDelta(
                text=piece, part_index=delta.part_index,
                logprobs=delta.logprobs if number == 0 else (),
                logprobs_complete=delta.logprobs_complete))


class ChatEngine:
    """A DSPy engine that sends `chat_request` bodies through `send(body) -> dict`."""

    supports_response_schema = True
    supported_params = frozenset({"response_format", "temperature", "max_tokens", "stop", "seed"})

    name = "chat"
    max_list_items = DEFAULT_MAX_LIST_ITEMS
    request_model: str | None = None

    def send(self, body: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def complete(self, request) -> Response:
        body = chat_request(request, model=self.request_model,
                            max_list_items=self.max_list_items)
        response = chat_response(self.send(body), self.name)
        _refuse_incomplete_json(body, response.message.text or "", self.name)
        _refuse_strings_at_their_bound(body, response.message.text or "", self.name)
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
        for attempt in range(self.max_retries + 1):
            if self.bucket is not None:
                self.bucket.acquire()
            try:
                if self.in_flight is None:
                    return self._send_once(body)
                with self.in_flight:
                    return self._send_once(body)
            except _Busy as busy:
                if attempt == self.max_retries:
                    raise busy.error from None
                self._sleep(backoff_delay(attempt + 1, self.backoff, busy.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

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

    def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(API_KEY_ENV)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        http = urllib.request.Request(f"{url}/chat/completions", method="POST",
                                      data=json.dumps(body).encode("utf-8"), headers=headers)
        try:
            with urllib.request.urlopen(http, timeout=self.timeout) as reply:
                return json.loads(reply.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            # Redacted before it is cut: a cut inside an echoed key would leave a prefix that
            # no longer matches the key.
            detail = redact(exc.read().decode("utf-8", "replace"))[:300]
            if exc.code in (401, 403):
                raise LMKeyRejected(f"{self.name}: the server rejected the API key (HTTP "
                                    f"{exc.code}): {detail}; check {API_KEY_ENV}",
                                    status=exc.code) from None
            if exc.code in (429, 503):
                raise _Busy(lm15.RateLimitError(f"{self.name}: HTTP {exc.code}: {detail}",
                                                status=exc.code),
                            exc.headers.get("Retry-After")) from None
            kind = lm15.ServerError if exc.code >= 500 else lm15.InvalidRequestError
            raise kind(f"{self.name}: HTTP {exc.code}: {detail}", status=exc.code) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
            reason = redact(getattr(exc, "reason", exc))
            raise lm15.TransportError(f"{self.name}: cannot reach {url}: {reason}") from None
        except json.JSONDecodeError as exc:
            raise lm15.ServerError(f"{self.name}: the server's reply is not JSON ({exc})") from None

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
