"""What SERC's stages share: their settings, the standalone runner, and small helpers."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import dspy

from serc_dspy.core.trace import Check, Fact, Passage, Trace
from serc_dspy.programs.base import InputError
from serc_dspy.programs.serc.options import SercOptions
from serc_dspy.retrieval.base import RetrievalError, as_retriever, cap_context
from serc_dspy.rules import RuleSet
from serc_dspy.runtime.steps import Run, StepSpec, in_thread, run_sync

UNCHANGED = ("kept", "unverified", "uncorrected", "disputed")
REWRITE_CONTEXT_SENTENCES = 2
"""A rewrite sees the accepted facts of this many preceding sentences (for flow: not repeating
them, resolving "she"). All of them would make rewrite prompts grow with the square of the
draft's length (13 tokens x n^2, 21% of prompt tokens at 80 sentences)."""
NO_PASSAGES_EVIDENCE = "The search returned no passages for this query."
DEFAULT_TOP_K = 8
DEFAULT_CONTEXT_CHARS = 20_000


class Settings:
    """What a SERC's stages share: its options (`SercOptions`, read through as attributes:
    `settings.verdicts`), its retriever and retrieval depth, its worker bound and its rules.
    A stage built alone takes the same keywords (`CheckNodes(evidence="passages")`)."""

    def __init__(self, retriever: Any = None, *, options: SercOptions | None = None,
                 top_k: int = DEFAULT_TOP_K, context_chars: int = DEFAULT_CONTEXT_CHARS,
                 max_workers: int = 8, rules: RuleSet | None = None, **overrides: Any):
        self.options = SercOptions.build(options, overrides)
        if retriever is not None and not hasattr(retriever, "takes_k"):
            retriever = as_retriever(retriever)
        self.retriever, self.top_k, self.context_chars = retriever, top_k, context_chars
        self.max_workers = max_workers
        self.rules = rules if rules is not None else RuleSet(self.options.rules)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or "options" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.options, name)

    @property
    def max_facts_per_check(self) -> int:
        return self.options.check_degree

    @property
    def reconstruction(self) -> str:
        return self.options.reconstruct

    @property
    def claim_verifier(self) -> Any:
        return self.options.verifier

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
