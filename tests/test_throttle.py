"""Throttling: in-flight caps, token buckets and 429 backoff, pinned by counts, not timing."""

from __future__ import annotations

import threading

import dspy
import pytest
from fake_openai import FakeOpenAIServer

from serc_dspy.backends import lm_from_spec
from serc_dspy.core.errors import UserError
from serc_dspy.runtime.throttle import InFlightLimit, RateLimited, TokenBucket, backoff_delay
from serc_dspy.signatures import JudgeFact


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_token_bucket_holds_the_rate():
    clock = FakeClock()
    bucket = TokenBucket(2.0, burst=1, clock=clock, sleep=clock.sleep)
    for _ in range(11):
        bucket.acquire()
    assert clock.now == pytest.approx(5.0)  # 11 requests at 2/s: the first is free


def test_a_rate_limited_retriever_spaces_its_searches():
    clock = FakeClock()
    seen = []
    limited = RateLimited(lambda q, k: seen.append(clock.now) or [], 4.0, clock=clock,
                          sleep=clock.sleep)
    for n in range(9):
        limited(f"q{n}", 3)
    assert seen[-1] == pytest.approx(2.0)
    assert all(b - a >= 0.25 - 1e-9 for a, b in zip(seen, seen[1:], strict=False))


def test_backoff_honours_retry_after_and_doubles_otherwise():
    assert backoff_delay(1, 1.0, "7") == 7.0
    assert [backoff_delay(n, 0.5) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]
    assert backoff_delay(10, 1.0) == 60.0
    with pytest.raises(UserError):
        InFlightLimit(0)


def _judge(lm):
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        return dspy.Predict(JudgeFact)(evidence="e", claim="c")


def test_the_server_lm_never_exceeds_its_in_flight_cap():
    with FakeOpenAIServer(delay=0.05) as server:
        lm = lm_from_spec(f"openai={server.url}#fake", max_in_flight=2)
        threads = [threading.Thread(target=_judge, args=(lm,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(server.requests) == 8
    assert server.peak == 2
    assert lm.engine.in_flight.peak == 2


def test_http_429_is_retried_with_backoff_then_succeeds():
    with FakeOpenAIServer(busy=2) as server:
        lm = lm_from_spec(f"openai={server.url}#fake")
        lm.engine.backoff = 0.0
        assert _judge(lm).verdict in ("SUPPORTED", "CONTRADICTED", "NOT_FOUND")
    assert len(server.requests) == 3  # two 429s, then the answer


def test_a_server_that_stays_busy_fails_after_its_retries():
    with FakeOpenAIServer(busy=10) as server:
        lm = lm_from_spec(f"openai={server.url}#fake")
        lm.engine.backoff, lm.engine.max_retries = 0.0, 2
        with pytest.raises(Exception, match="429"):
            _judge(lm)
    assert len(server.requests) == 3


def test_several_endpoints_share_one_run_and_fill_each_others_slots():
    """`sglang=URL1,URL2#MODEL`: several workers without a router. Each request goes to the
    endpoint with the fewest in flight, so one SERC run keeps both busy at once."""
    from serc_dspy import SERC, LocalCorpus

    corpus = LocalCorpus.from_texts({"curie.txt": "Marie Curie was born in Warsaw in 1867. "
                                     "She studied in Paris and won two Nobel Prizes."})
    draft = ("Marie Curie was born in Warsaw. She studied in Paris. She won a Nobel Prize. "
             "She was born in 1867.")
    with FakeOpenAIServer(delay=0.05) as a, FakeOpenAIServer(delay=0.05) as b:
        lm = lm_from_spec(f"sglang={a.url},{b.url}#fake")
        program = SERC(retriever=corpus, max_workers=4)
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            prediction = program(question="Tell me a bio of Marie Curie.", draft=draft)
    calls = prediction.trace.usage.total.calls
    assert len(a.requests) + len(b.requests) == calls > 8
    assert lm.engine.sent_to == {a.url: len(a.requests), b.url: len(b.requests)}
    assert abs(len(a.requests) - len(b.requests)) <= calls // 4  # balanced
    assert a.peak >= 2 and b.peak >= 2  # both workers served concurrent requests


def test_a_bad_endpoint_in_a_list_is_named():
    with pytest.raises(UserError, match="ftp://x"):
        lm_from_spec("sglang=http://127.0.0.1:1/v1,ftp://x#m")
