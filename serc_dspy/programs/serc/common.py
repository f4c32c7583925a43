"""What SERC's stages share: their settings, the standalone runner, and small helpers."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import dspy

from serc_dspy.programs.base import InputError
from serc_dspy.retrieval.base import RetrievalError, as_retriever, cap_context
from serc_dspy.rules import RuleSet
from serc_dspy.steps import Run, StepSpec, in_thread, run_sync
from serc_dspy.trace import Check, Fact, Passage, Trace

UNCHANGED = ("kept", "unverified", "uncorrected", "disputed")
REWRITE_CONTEXT_SENTENCES = 2
"""A rewrite sees the accepted facts of this many preceding sentences (for flow: not repeating
them, resolving "she"). All of them would make rewrite prompts grow with the square of the
draft's length (13 tokens x n^2, 21% of prompt tokens at 80 sentences)."""
NO_PASSAGES_EVIDENCE = "The search returned no passages for this query."
DEFAULT_TOP_K = 8
DEFAULT_CONTEXT_CHARS = 20_000


@dataclass
class Settings:
    """A SERC's options, shared by its stages (see `SERC` for what each one does)."""

    retriever: Any = None
    top_k: int = DEFAULT_TOP_K
    context_chars: int = DEFAULT_CONTEXT_CHARS
    firewall: bool = True
    use_retrieval: bool = True
    density: str = "sentence"
    max_facts_per_check: int = 5
    match_cutoff: float = 0.75
    polish_temperature: float = 0.1
    queries: str = "lm"
    evidence: str = "summary"
    verdicts: str = "check"
    max_sentences: int = 100
    max_facts_per_sentence: int = 12
    fact_evidence: bool = False
    evidence_window: int | None = None
    reconstruction: str = "rebuild"
    claim_verifier: Any = None
    max_workers: int = 8
    rules: RuleSet = field(default_factory=RuleSet)

    def __post_init__(self) -> None:
        if self.retriever is not None and not hasattr(self.retriever, "takes_k"):
            self.retriever = as_retriever(self.retriever)

    async def retrieve(self, run: Run, query: str) -> list[Passage]:
        """Retrieve (off the event loop) and cap the context; raises RetrievalError."""
        if self.retriever is None:
            raise RetrievalError("no retriever configured")
        found = await in_thread(self.retriever, query, self.top_k)
        return cap_context(found, self.context_chars)


class Stage(dspy.Module):
    """One SERC stage as a DSPy module: its own predictors, run through the step layer, and
    the settings of the SERC it belongs to (a stage built alone gets its own)."""

    steps: ClassVar[dict[str, StepSpec]] = {}

    def __init__(self, settings: Settings | None = None, **options: Any):
        super().__init__()
        self.settings = settings if settings is not None else Settings(**options)

    def standalone(self, fn: Callable[..., Awaitable[Any]], *args: Any,
                   trace: Trace | None = None) -> tuple[Any, Trace]:
        """Run one of the stage's coroutines on a fresh run of its own (a stage called
        alone, outside a SERC): its predictors, the context's LM, every rule at its setting."""
        if dspy.settings.lm is None:
            raise InputError("no LM is configured: call the stage inside "
                             "`with dspy.context(lm=...)`")
        trace = trace or Trace(method=type(self).__name__)
        run = Run(trace, predictors={name: getattr(self, name) for name in self.steps},
                  table=self.steps, max_in_flight=self.settings.max_workers,
                  rules=self.settings.rules)

        async def go() -> Any:
            return await fn(run, *args)

        return run_sync(go), trace


class AcceptedFacts:
    """Each sentence's accepted facts, published as soon as its correction map is done, so a
    rewrite waits only for the sentences before it that it reads (REWRITE_CONTEXT_SENTENCES)."""

    def __init__(self, n: int):
        self.facts: list[list[str] | None] = [None] * n
        self.ready = [asyncio.Event() for _ in range(n)]

    def set(self, index: int, facts: list[str]) -> None:
        if self.facts[index] is None:
            self.facts[index] = list(facts)
            self.ready[index].set()

    async def before(self, index: int, window: int) -> list[str]:
        earlier = range(max(0, index - window), index)
        for k in earlier:
            await self.ready[k].wait()
        return [fact for k in earlier for fact in self.facts[k] or []]


def node_order(node: Fact | Check) -> tuple[int, int]:
    """Sentence, then position: `f3.10` and `c3.1` sort after `f3.2` and `c3.0`."""
    return node.sentence, int(node.id.rsplit(".", 1)[1])


def subject_name(subject: str) -> str:
    """The name in a `Name (Characteristic)` subject; empty when the subject is no name (the
    question itself, with the firewall off)."""
    name = re.sub(r"\s*\([^)]*\)\s*$", "", subject or "").strip()
    return name if 0 < len(name.split()) <= 5 and not name.endswith("?") else ""


def as_sentence(fact: str) -> str:
    fact = fact.strip()
    return fact if fact.endswith((".", "!", "?")) else fact + "."


class StaticContext:
    """Passages given up front, in the shape the firewall reads R(Q) in (`get()`)."""

    def __init__(self, passages: list[Passage]):
        self.passages = passages

    async def get(self) -> list[Passage]:
        return self.passages
