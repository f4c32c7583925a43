"""A scripted LM for control-flow tests: answers per signature from Python functions.

DSPy's DummyLM answers from a list in call order, which is meaningless once check nodes run
concurrently. This engine instead recognises which signature a request is for (by its
instructions) and the input fields (by JSONAdapter's `[[ ## name ## ]]` markers), and returns
what a handler computes from those inputs, so tests stay deterministic under concurrency.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

import dspy
from dspy.lm15 import Message, Response, TextPart, TokenLogprob, TopLogprob, Usage

from serc_dspy.backends.chat import in_engine_thread, stream_events
from serc_dspy.retrieval import LocalCorpus

_FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\n\nRespond with|\Z)", re.S)

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class Raw(str):
    """A handler's reply sent as it is, not as JSON: a cut-off or broken completion."""


LOGPROBS = "_logprobs"
"""A handler's output key for the log-probabilities of one output's value: {"choice": "B",
"_logprobs": {"A": -0.4, "B": -1.1}} scores the token that writes "B" (sent only where the
request asked for log-probabilities, as a server does)."""


def _token_logprobs(text: str, field: str, top: dict[str, float]) -> tuple[TokenLogprob, ...]:
    """The reply as three tokens, the middle one the field's value with `top` as its
    alternatives, as an OpenAI-compatible server reports them."""
    value = json.loads(text)[field]
    head, tail = text.split(json.dumps(value), 1)
    alternatives = tuple(TopLogprob(token=t, logprob=lp) for t, lp in top.items())
    return (TokenLogprob(token=head + '"', logprob=0.0),
            TokenLogprob(token=str(value), logprob=top.get(str(value), 0.0), top=alternatives),
            TokenLogprob(token='"' + tail, logprob=0.0))


def _parse_value(raw: str) -> Any:
    raw = raw.strip()
    if raw.startswith("[") or raw.startswith("{"):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


class ScriptedEngine:
    supports_response_schema = True
    supported_params = frozenset({"response_format", "temperature", "max_tokens", "logprobs"})

    def __init__(self, handlers: dict[str, Handler]):
        self.handlers = handlers
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._signatures = _signature_index()

    def complete(self, request) -> Response:
        system = request.system if isinstance(request.system, str) else "".join(
            getattr(p, "text", "") for p in (request.system or ()))
        user = request.messages[-1].text or ""
        name = next((n for n, marker in self._signatures if marker in system), None)
        if name is None:
            raise AssertionError(f"unrecognised signature in request: {system[:200]}")
        inputs = {k: _parse_value(v) for k, v in _FIELD.findall(user)}
        record = {"signature": name, "inputs": inputs, "system": system, "user": user,
                  "temperature": request.config.temperature,
                  "max_tokens": request.config.max_tokens,
                  "schema": request.config.response_format}
        with self._lock:
            self.calls.append(record)
        if name not in self.handlers:
            raise AssertionError(f"no scripted handler for {name}")
        outputs = self.handlers[name](inputs)
        top = outputs.pop(LOGPROBS, None) if isinstance(outputs, dict) else None
        text = str(outputs) if isinstance(outputs, Raw) else json.dumps(outputs)
        logprobs = _token_logprobs(text, next(iter(outputs)), top) \
            if top and request.config.logprobs is not None else None
        return Response(id=None, model="scripted", logprobs=logprobs,
                        message=Message.assistant([TextPart(text)]),
                        finish_reason="stop",
                        usage=Usage(input_tokens=len(system + user) // 4,
                                    output_tokens=len(text) // 4,
                                    total_tokens=0))

    def stream(self, request):
        return stream_events(self.complete(request))

    def of(self, name: str) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["signature"] == name]


class AsyncScriptedEngine:
    """The async half, as the real engines do it (`chat.ThreadedAsyncEngine`): the sync call
    in a worker thread, so a handler that sleeps or blocks never stalls the event loop."""

    def __init__(self, sync: ScriptedEngine):
        self.sync = sync

    async def complete(self, request) -> Response:
        return await in_engine_thread(self.sync.complete, request)

    async def stream(self, request):
        for event in await in_engine_thread(lambda: list(self.sync.stream(request))):
            yield event


def _signature_index() -> list[tuple[str, str]]:
    import serc_dspy.signatures as sigs

    index = []
    for name in sigs.__all__:
        sig = getattr(sigs, name)
        if isinstance(sig, type) and issubclass(sig, dspy.Signature):
            first_line = sig.instructions.strip().splitlines()[0]
            index.append((name, first_line))
    # Longer markers first, so a signature whose first line contains another's wins.
    index.sort(key=lambda item: -len(item[1]))
    return index


def scripted_lm(handlers: dict[str, Handler], name: str = "scripted"
                ) -> tuple[dspy.LM, ScriptedEngine]:
    engine = ScriptedEngine(handlers)
    lm = dspy.LM(f"local/{name}", engine=engine, async_engine=AsyncScriptedEngine(engine),
                 cache=False, temperature=0.0, max_tokens=512)
    return lm, engine


# A tiny corpus the scripted scenarios retrieve from.
CORPUS = {
    "curie.txt": "Marie Curie was born in Warsaw in 1867. She studied at the Sorbonne in Paris. "
                 "She won the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
}


class CountingRetriever:
    """A retriever that records its queries and can be made to fail like a search outage."""

    def __init__(self, inner=None, fail=False):
        self.inner = inner or LocalCorpus.from_texts(CORPUS)
        self.fail = fail
        self.queries = []

    def __call__(self, query, k):
        self.queries.append(query)
        if self.fail:
            raise ConnectionError("search backend is down")
        return self.inner(query, k)


def entity(name: str, characteristic: str = "") -> dict[str, str]:
    """A scripted firewall descriptor (QueryEntity / AnswerEntity / EvidenceEntity outputs)."""
    return {"name": name, "characteristic": characteristic}


def reader(truth: set[str]) -> Handler:
    """A `ChooseValue` handler that reads like a careful model: the option whose value is one of
    `truth`, else "not stated" (options show evidence values as `V (the evidence: "...")`)."""
    def choose(inputs: dict[str, Any]) -> dict[str, Any]:
        options = [(line[0], line[3:].split(" (the evidence:")[0])
                   for line in str(inputs["options"]).splitlines() if line[1:3] == ") "]
        for letter, value in options:
            if value in truth:
                return {"choice": letter}
        return {"choice": next(letter for letter, value in options if value == "not stated")}
    return choose
