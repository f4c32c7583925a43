"""Behaviour of the Tavily retriever against a local HTTP server impersonating Tavily's API."""

from __future__ import annotations

import inspect
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from serc_dspy.core.errors import UserError
from serc_dspy.core.trace import Check, Passage, Trace
from serc_dspy.retrieval import DEFAULT_TOP_K, RetrievalError, Retriever
from serc_dspy.retrieval.tavily import MAX_RESULTS_LIMIT, TavilyKeyError, TavilyRetriever

FAKE_KEY = "tvly-SECRET-4f9c2e7a1b-DO-NOT-LEAK"

RESULTS = [
    {
        "title": "Eiffel Tower - Wikipedia",
        "url": "https://en.wikipedia.org/wiki/Eiffel_Tower",
        "content": "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889.",
        "score": 0.9812,
        "raw_content": None,
    },
    {
        "title": "Tour Eiffel - Official website",
        "url": "https://www.toureiffel.paris/en",
        "content": "Gustave Eiffel's company designed and built the tower for the 1889 fair.",
        "score": 0.8734,
        "raw_content": None,
    },
    {
        "title": "Paris landmarks (no url)",
        "url": "",
        "content": "The tower was the tallest man-made structure until 1930.",
        "score": 0.52,
        "raw_content": None,
    },
]


def _search_body(query: str, results: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "query": query,
        "follow_up_questions": None,
        "answer": None,
        "images": [],
        "results": RESULTS if results is None else results,
        "response_time": 1.42,
        "request_id": "123e4567-e89b-12d3-a456-426614174111",
    }


def _error(message: str) -> dict[str, Any]:
    return {"detail": {"error": message}}


@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] | None = None
    delay: float = 0.0


@dataclass
class FakeTavily:
    """Records every request; answers from `script` first, then with a normal search body."""

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    script: list[Reply] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        with self.lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
            reply = self.script.pop(0) if self.script else Reply()
        if reply.body is None:
            reply = Reply(reply.status, _search_body(body.get("query", "")), reply.delay)
        return reply

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]


def _handler(fake: FakeTavily) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            reply = fake.reply(self.path, dict(self.headers), body)
            time.sleep(reply.delay)
            data = json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return Handler


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", FAKE_KEY)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("TAVILY_HTTP_PROXY", raising=False)
    monkeypatch.delenv("TAVILY_HTTPS_PROXY", raising=False)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # the default backlog of 5 drops connects from a thread pool


@pytest.fixture
def fake() -> Iterator[FakeTavily]:
    state = FakeTavily()
    server = _Server(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class Sleeps(list[float]):
    """An injectable `sleep` that records the backoff delays instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _retriever(fake: FakeTavily, **kwargs: Any) -> TavilyRetriever:
    kwargs.setdefault("sleep", Sleeps())
    return TavilyRetriever(base_url=fake.url, **kwargs)


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# --- successful searches -------------------------------------------------------------------


def test_results_become_passages_with_url_sources_and_scores(fake: FakeTavily) -> None:
    passages = _retriever(fake)("When was the Eiffel Tower completed?", 5)
    assert passages == [
        Passage(text=RESULTS[0]["content"], source=RESULTS[0]["url"], score=0.9812),
        Passage(text=RESULTS[1]["content"], source=RESULTS[1]["url"], score=0.8734),
        Passage(text=RESULTS[2]["content"], source="Paris landmarks (no url)", score=0.52),
    ]


def test_request_uses_paper_settings_and_bearer_auth(fake: FakeTavily) -> None:
    retriever = _retriever(fake)
    retriever("Eiffel Tower completion year", 5)
    retriever("Eiffel Tower height")
    first, second = fake.requests
    assert first["path"] == "/search"
    assert first["body"]["query"] == "Eiffel Tower completion year"
    assert first["body"]["search_depth"] == "advanced"
    assert first["body"]["max_results"] == 5
    assert second["body"]["max_results"] == DEFAULT_TOP_K == 8
    assert first["headers"]["Authorization"] == f"Bearer {FAKE_KEY}"
    assert FAKE_KEY not in json.dumps(first["body"])  # the key travels only in the header


def test_key_is_read_once_at_construction(
    fake: FakeTavily, monkeypatch: pytest.MonkeyPatch
) -> None:
    retriever = _retriever(fake)
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-a-different-key")
    retriever("q", 1)
    assert fake.requests[0]["headers"]["Authorization"] == f"Bearer {FAKE_KEY}"


def test_results_are_trimmed_to_k_and_empty_content_is_dropped(fake: FakeTavily) -> None:
    many = [
        {
            "title": f"t{i}",
            "url": f"https://example.org/{i}",
            "content": f"c{i}",
            "score": 1 - i / 10,
        }
        for i in range(6)
    ]
    many.insert(1, {"title": "empty", "url": "https://example.org/empty", "content": ""})
    fake.script.append(Reply(body=_search_body("q", many)))
    passages = _retriever(fake)("q", 3)
    assert [p.source for p in passages] == [f"https://example.org/{i}" for i in range(3)]


def test_context_is_capped_at_20000_characters(fake: FakeTavily) -> None:
    big = [
        {"url": f"https://example.org/{i}", "content": "x" * 15_000, "score": 0.5} for i in range(3)
    ]
    fake.script.append(Reply(body=_search_body("q", big)))
    passages = _retriever(fake)("q", 3)
    assert [len(p.text) for p in passages] == [15_000, 5_000]


def test_k_is_clamped_to_tavily_limit_and_nonpositive_k_sends_nothing(fake: FakeTavily) -> None:
    retriever = _retriever(fake)
    assert retriever("q", 0) == []
    assert fake.requests == []
    retriever("q", 50)
    assert fake.bodies[0]["max_results"] == MAX_RESULTS_LIMIT == 20


def test_concurrent_calls_from_a_thread_pool(fake: FakeTavily) -> None:
    retriever = _retriever(fake)
    queries = [f"query number {i}" for i in range(24)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda q: retriever(q, 2), queries))
    assert len(fake.requests) == 24
    assert sorted(b["query"] for b in fake.bodies) == sorted(queries)
    assert all(len(r) == 2 and r[0].source == RESULTS[0]["url"] for r in results)
    retriever.close()


def test_identity_and_protocol(fake: FakeTavily) -> None:
    retriever = _retriever(fake)
    assert retriever.name == "tavily"
    assert isinstance(retriever, Retriever)
    assert not any("key" in p for p in inspect.signature(TavilyRetriever).parameters)


# --- retries -------------------------------------------------------------------------------


def test_rate_limit_is_retried_after_backoff(fake: FakeTavily) -> None:
    fake.script.append(Reply(429, _error("Too many requests")))
    sleeps = Sleeps()
    passages = _retriever(fake, sleep=sleeps)("Eiffel", 3)
    assert len(fake.requests) == 2
    assert sleeps == [1.0]
    assert passages[0].source == RESULTS[0]["url"]


def test_server_errors_exhaust_retries_with_exponential_backoff(fake: FakeTavily) -> None:
    fake.script.extend(Reply(500, _error("internal error")) for _ in range(10))
    sleeps = Sleeps()
    with pytest.raises(RetrievalError, match="after 4 attempts: HTTP 500"):
        _retriever(fake, sleep=sleeps, backoff=0.5)("Eiffel", 3)
    assert len(fake.requests) == 4
    assert sleeps == [0.5, 1.0, 2.0]


def test_transient_5xx_then_success(fake: FakeTavily) -> None:
    fake.script.extend([Reply(502, {}), Reply(503, {})])
    passages = _retriever(fake)("Eiffel", 1)
    assert len(fake.requests) == 3
    assert len(passages) == 1


def test_connection_errors_are_retried_then_reported() -> None:
    sleeps = Sleeps()
    retriever = TavilyRetriever(base_url=_closed_port_url(), max_retries=2, sleep=sleeps)
    with pytest.raises(RetrievalError, match="after 3 attempts: connection error"):
        retriever("Eiffel", 3)
    assert sleeps == [1.0, 2.0]


def test_timeouts_are_retried_then_reported(fake: FakeTavily) -> None:
    fake.script.extend([Reply(delay=1.0), Reply(delay=1.0)])
    retriever = _retriever(fake, timeout=0.2, max_retries=1)
    with pytest.raises(RetrievalError, match="after 2 attempts: timed out after 0.2s"):
        retriever("Eiffel", 3)
    assert len(fake.requests) == 2


def test_bad_request_is_not_retried(fake: FakeTavily) -> None:
    fake.script.append(Reply(400, _error("Invalid search_depth")))
    with pytest.raises(RetrievalError, match=r"bad request \(HTTP 400\): Invalid search_depth"):
        _retriever(fake)("Eiffel", 3)
    assert len(fake.requests) == 1


def test_malformed_response_is_a_retrieval_error(fake: FakeTavily) -> None:
    fake.script.append(Reply(body={"query": "q", "results": "not a list"}))
    with pytest.raises(RetrievalError, match="no 'results' list"):
        _retriever(fake)("q", 3)


# --- key handling --------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_rejected_key_is_a_user_error_and_not_retried(fake: FakeTavily, status: int) -> None:
    fake.script.append(Reply(status, _error("Unauthorized: missing or invalid API key.")))
    with pytest.raises(TavilyKeyError, match="rejected the API key in TAVILY_API_KEY") as info:
        _retriever(fake)("Eiffel", 3)
    assert isinstance(info.value, UserError)
    assert f"HTTP {status}" in str(info.value)
    assert "\n" not in str(info.value)
    assert len(fake.requests) == 1


@pytest.mark.parametrize("value", [None, "", "   "])
def test_missing_key_is_a_user_error(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("TAVILY_API_KEY")
    else:
        monkeypatch.setenv("TAVILY_API_KEY", value)
    with pytest.raises(TavilyKeyError, match="set the TAVILY_API_KEY environment variable"):
        TavilyRetriever()


def test_key_never_leaks(fake: FakeTavily, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("serc_dspy", "urllib3", "requests", "httpx", "httpcore", "tavily"):
        caplog.set_level(logging.DEBUG, logger=name)
    retriever = _retriever(fake)
    # A hostile or buggy server echoing the key in its error detail must not leak it either.
    fake.script.extend(
        [
            Reply(429, _error(f"rate limited for {FAKE_KEY}")),
            Reply(),
            *[Reply(500, _error(f"boom {FAKE_KEY}")) for _ in range(4)],
            Reply(401, _error(f"Invalid API key: {FAKE_KEY}")),
            Reply(400, _error(f"bad query for key {FAKE_KEY}")),
        ]
    )
    passages = retriever("Eiffel", 3)
    errors: list[BaseException] = []
    for _ in range(3):
        with pytest.raises((RetrievalError, TavilyKeyError)) as info:
            retriever("Eiffel", 3)
        errors.append(info.value)
    with pytest.raises(RetrievalError) as info:
        TavilyRetriever(base_url=_closed_port_url(), max_retries=0)("Eiffel", 3)
    errors.append(info.value)
    trace = Trace(checks=[Check(id="c1", facts=["f1"], sentence=0, passages=passages)])

    assert len(fake.requests) == 8
    assert "[redacted]" in str(errors[1])  # the echoed key was scrubbed, not just absent
    assert all(e.__cause__ is None and e.__context__ is None for e in errors)
    assert "Tavily attempt 1/4 failed" in caplog.text  # logging really was captured
    assert any(r.name.startswith("urllib3") for r in caplog.records)
    exposed = [
        *(str(e) for e in errors),
        *(repr(e) for e in errors),
        repr(retriever),
        repr(vars(retriever)),
        json.dumps([p.model_dump() for p in passages]),
        trace.model_dump_json(),
        caplog.text,
        *(r.getMessage() for r in caplog.records),
    ]
    assert not [text for text in exposed if FAKE_KEY in text]
