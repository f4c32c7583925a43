"""Calls of one stage send a byte-identical prompt prefix (system message, instructions,
demos, the first field's marker), so an engine's prompt cache serves it after the first call."""

from pathlib import Path

import dspy
from scripted import AsyncScriptedEngine, ScriptedEngine
from test_serc import DRAFT, handlers

import serc_dspy
from serc_dspy import SERC, LocalCorpus, StrictJSONAdapter
from serc_dspy.backends.chat import chat_request

QWEN_STATE = Path(serc_dspy.__file__).resolve().parent / "compiled" / "qwen1.5b.json"


class BodyRecorder(ScriptedEngine):
    """The scripted engine, also keeping each request's chat-completions body."""

    def __init__(self, handlers):
        super().__init__(handlers)
        self.bodies = []

    def complete(self, request):
        body = chat_request(request)
        system = body["messages"][0]["content"]
        name = next(n for n, marker in self._signatures if marker in system)
        with self._lock:
            self.bodies.append((name, body))
        return super().complete(request)


def test_calls_of_one_stage_share_their_prompt_up_to_the_first_per_call_field():
    engine = BodyRecorder(handlers())
    lm = dspy.LM("local/recorder", engine=engine, async_engine=AsyncScriptedEngine(engine),
                 cache=False, temperature=0.0, max_tokens=512)
    corpus = LocalCorpus.from_texts({"c.txt": "Marie Curie was born in Warsaw in 1867."})
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        SERC(retriever=corpus, compiled=QWEN_STATE)(question="Tell me a bio of Marie Curie.",
                                                    draft=DRAFT)
    by_stage = {}
    for name, body in engine.bodies:
        by_stage.setdefault(name, []).append(body["messages"])
    compared = 0
    for calls in by_stage.values():
        for first, other in zip(calls, calls[1:], strict=False):
            assert first[:-1] == other[:-1]  # system message, instructions and demos
            a, b = first[-1]["content"], other[-1]["content"]
            opening = a[:a.index(" ## ]]\n") + len(" ## ]]\n")]  # the first field's marker
            assert b.startswith(opening)
            compared += 1
    assert compared >= 5
    assert any(len(calls[0]) > 2 for calls in by_stage.values())  # demos were in the prefix
