"""`dspy.streamify(serc)`: phase status messages and answer chunks, threaded and async."""

from __future__ import annotations

import asyncio
from collections import Counter

import dspy
import pytest
from scripted import CountingRetriever, scripted_lm
from test_serc import DRAFT, handlers

from serc_dspy import SERC


def _stream(is_async: bool):
    lm, _ = scripted_lm(handlers())
    serc = SERC(retriever=CountingRetriever(), max_workers=4)
    listeners = [
        dspy.streaming.StreamListener(signature_field_name="answer", predict=serc.polisher,
                                      predict_name="polisher"),
        # a stage that runs on the worker threads (one call per sentence)
        dspy.streaming.StreamListener(signature_field_name="facts", predict=serc.fact_extractor,
                                      predict_name="fact_extractor"),
    ]
    program = dspy.streamify(serc, stream_listeners=listeners, is_async_program=is_async)

    async def collect():
        items = []
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            async for item in program(question="Tell me a bio of Marie Curie.", draft=DRAFT):
                items.append(item)
        return items

    return asyncio.run(collect())


@pytest.mark.parametrize("is_async", [False, True], ids=["threaded", "async"])
def test_streamify_yields_phase_messages_and_answer_chunks(is_async):
    items = _stream(is_async)
    final = items[-1]
    assert isinstance(final, dspy.Prediction)
    assert final.trace.status == "decoded" and not final.trace.errors
    assert "Warsaw" in final.answer
    statuses = [i.message for i in items if isinstance(i, dspy.streaming.StatusMessage)]
    for phase in ("generate", "firewall", "decompose", "detect", "correct", "polish"):
        assert any(m.startswith(phase + ":") for m in statuses), (phase, statuses)
    chunks = [i for i in items if isinstance(i, dspy.streaming.StreamResponse)]
    by_predictor = Counter(c.predict_name for c in chunks)
    assert by_predictor["polisher"] > 5 and by_predictor["fact_extractor"] > 0
    streamed = "".join(c.chunk for c in chunks if c.predict_name == "polisher")
    assert "Marie Curie was born in Warsaw" in streamed
