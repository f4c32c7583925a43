"""A user's claim verifier is code the run does not control (N11, N19; the DSPy issue's point
5): one that hangs is cut off by the run's deadline or its own per-call bound, sync or async;
one that returns malformed objects loses only its own vote, says so in an event and a warning,
and never takes the check's LM votes with it. Scripted LMs only."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from pathlib import Path

import dspy
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "programs"))

from scripted import CountingRetriever, scripted_lm  # noqa: E402
from test_serc import DRAFT, handlers  # noqa: E402

from serc_dspy import SERC, StrictJSONAdapter  # noqa: E402
from serc_dspy.verifiers.base import ThreadedVerifier, VerifierVerdict  # noqa: E402

RELEASE = threading.Event()


class HungSync(ThreadedVerifier):
    def verify(self, claims, evidence):
        RELEASE.wait(60)  # released when the test ends: no thread outlives the suite
        return []


class HungAsync:
    def verify(self, claims, evidence):
        raise AssertionError("the async path is used")

    async def averify(self, claims, evidence):
        await asyncio.sleep(3600)


class Strings:
    def verify(self, claims, evidence):
        return ["SUPPORTED" for _ in claims]

    async def averify(self, claims, evidence):
        return self.verify(claims, evidence)


class Agrees:
    async def averify(self, claims, evidence):
        return [VerifierVerdict(claim=c, verdict="CONTRADICTED", support=0.0,
                                contradiction=0.9) for c in claims]

    def verify(self, claims, evidence):
        raise AssertionError("the async path is used")


def decode(verifier, **options):
    lm, _ = scripted_lm(handlers())
    program = SERC(retriever=CountingRetriever(), verifier=verifier, **options)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        return program(question="Tell me a bio of Marie Curie.", draft=DRAFT)


@pytest.fixture(autouse=True)
def release_threads():
    RELEASE.clear()
    yield
    RELEASE.set()


@pytest.mark.parametrize("verifier", [HungSync(), HungAsync()], ids=["sync", "async"])
def test_a_hung_verifier_is_cut_off_by_the_deadline(verifier):
    start = time.monotonic()
    result = decode(verifier, deadline_s=3)
    assert time.monotonic() - start < 30
    assert any("no verdict within" in e.message for e in result.trace.errors)
    assert result.answer.startswith("Marie Curie was born in")  # nothing lost meanwhile


def test_a_hung_verifier_is_cut_off_by_its_own_bound_without_a_deadline():
    verifier = HungSync()
    verifier.timeout_s = 0.5
    start = time.monotonic()
    result = decode(verifier)
    assert time.monotonic() - start < 30
    assert any("no verdict within 0.5s" in e.message for e in result.trace.errors)


def test_malformed_verdicts_lose_only_the_verifiers_vote_and_say_so(caplog):
    with caplog.at_level(logging.WARNING):
        result = decode(Strings())
    trace = result.trace
    lost = [e.message for e in trace.errors if "claim verifier failed" in e.message]
    assert lost and "not a VerifierVerdict" in lost[0]
    assert "claim verifier failed" in caplog.text  # a warning, not only the trace
    assert all(c.error is None for c in trace.checks)  # the LM's votes stand
    born = trace.fact("f0.0")
    assert born.lm_verdict == "CONTRADICTED" and "verifier" not in born.votes
    agreeing = decode(Agrees()).trace.fact("f0.0")
    assert agreeing.votes["verifier"] == "CONTRADICTED"
