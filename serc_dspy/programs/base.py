"""What every method program shares: traced LM calls, per-stage LMs, and bounded concurrency."""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import dspy

from serc_dspy.errors import DecodingFailed, StepFailed, UserError, redact
from serc_dspy.retrieval.base import (
    DEFAULT_CONTEXT_CHARS,
    DEFAULT_TOP_K,
    RetrievalError,
    as_retriever,
    cap_context,
)
from serc_dspy.signatures import AnswerQuestion
from serc_dspy.steps import tracked_call
from serc_dspy.text import defang
from serc_dspy.trace import Passage, Step, StepUsage, Trace

T = TypeVar("T")
R = TypeVar("R")

ProgressCallback = Callable[[str, int, int], None]
"""Called as `progress(phase, done, total)`; the CLI prints it, library code never does."""

OnError = Literal["degrade", "raise"]
logger = logging.getLogger("serc_dspy")

STAGES = ("generate", "firewall", "decompose", "verify", "correct", "rewrite", "polish")
NO_INFO_ANSWER = "I could not find verified information to answer this question."


class DeadlineExceeded(StepFailed, TimeoutError):
    """The run's overall deadline passed before a step could start; the step degrades."""


class InputError(UserError):
    """The caller passed something a method cannot decode; the message says what."""


@dataclass
class Run:
    """Per-call state, so one program object can serve concurrent calls safely."""

    trace: Trace
    progress: ProgressCallback | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    deadline: float | None = None
    """`time.monotonic()` after which no new LM call starts (steps then degrade)."""
    substitutions: dict[str, Any] = field(default_factory=dict)
    """fact id -> the detail its cited quote swaps (facts.Substitution), found in detection
    and used by correction when the LM's own fix fails or rewrites the fact away."""

    def log(self, phase: str, message: str, kind: str = "info") -> None:
        with self.lock:
            self.trace.log(phase, redact(message), kind)

    def report(self, phase: str, done: int, total: int) -> None:
        """Progress of a phase: to the `progress` callback, and as a `dspy.streamify` status
        message when the run is streamed (a phase's start and its end)."""
        if self.progress is not None:
            self.progress(phase, done, total)
        stream = dspy.settings.send_stream
        if stream is not None and (done == 0 or done == total):
            from dspy.streaming.messages import StatusMessage, sync_send_to_stream

            state = "started" if done == 0 else "done"
            sync_send_to_stream(stream, StatusMessage(f"{phase}: {state} ({done}/{total})"))


def check_text(name: str, value: Any, *, allow_none: bool = False) -> str | None:
    """Reject empty or non-string inputs with a message naming the argument."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InputError(f"{name} is empty")
    return value.strip()


class TracedProgram(dspy.Module):
    """Base for SERC and the baselines.

    Every LM call goes through `call`, which applies the stage's LM (if the user gave one),
    turns on usage tracking, and records calls and tokens into the trace per step and per
    model. That is what lets the trace be the single source of cost figures.
    """

    method_name = "base"
    needs_retriever = False

    def __init__(
        self,
        retriever: Callable[[str, int], Any] | None = None,
        *,
        top_k: int = DEFAULT_TOP_K,
        context_chars: int = DEFAULT_CONTEXT_CHARS,
        max_workers: int = 4,
        lms: dict[str, dspy.LM] | None = None,
        adapter: Any = None,
        progress: ProgressCallback | None = None,
        on_error: OnError = "degrade",
        deadline_s: float | None = None,
        callbacks: list[Any] | None = None,
    ):
        super().__init__(callbacks=callbacks)
        if on_error not in ("degrade", "raise"):
            raise InputError(f"on_error must be 'degrade' or 'raise', got {on_error!r}")
        if top_k < 1:
            raise InputError(f"top_k must be at least 1, got {top_k}")
        if context_chars < 1:
            raise InputError(f"context_chars must be at least 1, got {context_chars}")
        if max_workers < 1:
            raise InputError(f"max_workers must be at least 1, got {max_workers}")
        not_lms = [stage for stage, lm in (lms or {}).items() if not isinstance(lm, dspy.BaseLM)]
        if not_lms:
            raise InputError(f"lms[{not_lms[0]!r}] is a {type(lms[not_lms[0]]).__name__}, not "
                             "a DSPy LM; build one, e.g. dspy.LM(...) or lm_from_spec(...)")
        self.retriever = as_retriever(retriever) if retriever is not None else None
        self.top_k = top_k
        self.context_chars = context_chars
        self.max_workers = max_workers
        self.lms = dict(lms or {})
        self.adapter = adapter
        self.progress = progress
        self.on_error = on_error
        if deadline_s is not None and deadline_s <= 0:
            raise InputError(f"deadline_s must be positive, got {deadline_s}")
        self.deadline_s = deadline_s
        self.answerer = dspy.Predict(AnswerQuestion)

    def check_lm_keys(self) -> None:
        """`lms` keys are stages (`verify`) or predictor names (`fact_checker`); anything else
        is a typo that would silently run on the default LM."""
        predictors = [name for name, _ in self.named_predictors()]
        unknown = sorted(set(self.lms) - set(STAGES) - set(predictors))
        if unknown:
            raise InputError(f"unknown key(s) {unknown} in lms; valid keys are the stages "
                             f"({', '.join(STAGES)}) and the predictors "
                             f"({', '.join(predictors)})")

    def lm_for(self, stage: str, predictor: dspy.Predict) -> Any:
        """The LM a call runs on: its predictor's own entry in `lms`, else its stage's, else
        the context's (None)."""
        if not self.lms:
            return None
        for name, candidate in self.named_predictors():
            if candidate is predictor and name in self.lms:
                return self.lms[name]
        return self.lms.get(stage)

    async def aforward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        """`await program.acall(...)`: the same decoding, off the event loop.

        The pipeline runs in an AnyIO worker thread (DSPy's settings travel with the context,
        and `dspy.streamify` can reach the loop from it); its independent calls still fan out
        on the thread pool, so an event loop (a notebook, a server) is never blocked and
        `asyncio.run` is not needed.
        """
        import functools

        import anyio.to_thread

        return await anyio.to_thread.run_sync(functools.partial(self.forward, question, draft))

    # -- LM calls -------------------------------------------------------------------------
    def call(self, run: Run, step: str, stage: str, predictor: dspy.Predict, **inputs):
        if run.deadline is not None and time.monotonic() > run.deadline:
            raise DeadlineExceeded(f"the run's deadline of {self.deadline_s:g}s has passed; "
                                   f"{step} was not started")
        def record(model: str, usage: StepUsage) -> None:
            with run.lock:
                run.trace.usage.record(step, model, usage)

        return tracked_call(predictor, record, lm=self.lm_for(stage, predictor),
                            adapter=self.adapter, **inputs)

    def initial_answer(self, run: Run, question: str, draft: str | None) -> str:
        """R_init: the caller's draft, or the LM's answer at temperature 0.

        Every method uses this same step, so methods given the same draft (or the same LM and
        question) start from the same initial answer and differ only by what they do next.
        """
        trace = run.trace
        run.report("generate", 0, 1)
        if draft is not None:
            answer, trace.draft_given = draft, True
        else:
            answer = self.call(run, "initial_answer", "generate", self.answerer,
                               question=question, config={"temperature": 0.0}).answer.strip()
        trace.initial_answer = answer
        return answer

    def start(self, question: str, draft: str | None) -> tuple[Run, str, str | None]:
        """Validate the inputs and open a run with a fresh trace."""
        question = defang(check_text("question", question))
        draft = check_text("draft", draft, allow_none=True)
        draft = defang(draft) if draft is not None else None
        if self.needs_retriever and self.retriever is None:
            raise InputError(
                f"{self.method_name} needs a retriever: pass retriever=... (e.g. a LocalCorpus)"
            )
        self.check_lm_keys()
        if dspy.settings.lm is None and not self.lms:
            raise InputError("no LM is configured: run the program inside "
                             "`with dspy.context(lm=...)` (or dspy.configure(lm=...)), or "
                             "give every stage one with lms={...}")
        run = Run(Trace(method=self.method_name, question=question), self.progress)
        if self.deadline_s is not None:
            run.deadline = time.monotonic() + self.deadline_s
        return run, question, draft

    def finish(self, run: Run, answer: str) -> dspy.Prediction:
        """Close the run. A run whose LM calls all failed is a failure, never a correction:
        status "failed", one warning, and `DecodingFailed` when `on_error="raise"`."""
        trace = run.trace
        trace.answer = answer
        usage = trace.usage.total
        if trace.status != "failed" and usage.calls and usage.failed == usage.calls:
            self.fail(run, f"every LM call failed ({usage.calls} made); last error: "
                           f"{next((e.message for e in reversed(trace.errors)), 'unknown')}")
        if trace.status == "failed":
            logger.warning("%s: %s", self.method_name, trace.failure)
            if self.on_error == "raise":
                raise DecodingFailed(trace.failure or "decoding failed", trace)
        return dspy.Prediction(answer=answer, initial_answer=run.trace.initial_answer,
                               trace=run.trace, usage=run.trace.usage)

    def fail(self, run: Run, reason: str) -> None:
        """Mark the run failed: the answer it returns is the input, not a correction."""
        run.trace.status = "failed"
        run.trace.failure = redact(reason)
        run.log("run", f"decoding failed: {run.trace.failure}", "error")

    def add_step(self, run: Run, step: Step) -> Step:
        with run.lock:
            run.trace.steps.append(step)
        return step

    # -- retrieval --------------------------------------------------------------------------
    def retrieve(self, query: str) -> list[Passage]:
        """Retrieve and cap the context; raises RetrievalError, which callers must not hide."""
        if self.retriever is None:
            raise RetrievalError("no retriever configured")
        return cap_context(self.retriever(query, self.top_k), self.context_chars)

    # -- concurrency ------------------------------------------------------------------------
    def parallel(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """Map `fn` over independent items on a bounded pool, keeping order.

        Each task runs in a copy of the caller's context so `dspy.context` settings (LM,
        adapter, usage tracking) reach the worker threads.
        """
        items = list(items)
        if self.max_workers <= 1 or len(items) <= 1:
            return [fn(item) for item in items]
        carry = _event_loop_token()
        with ThreadPoolExecutor(max_workers=min(self.max_workers, len(items))) as pool:
            futures = [pool.submit(contextvars.copy_context().run, _with_token, carry, fn, item)
                       for item in items]
            return [future.result() for future in futures]


def _event_loop_token() -> Any:
    """AnyIO's way back to the event loop from this thread, if it has one.

    `dspy.streamify` runs a program in an AnyIO worker thread and sends status messages and
    stream chunks to the loop with `anyio.from_thread.run`, which only works in such a thread.
    Our pool threads carry the caller's token so that streaming works with `max_workers > 1`.
    AnyIO keeps the token in a thread-local (`anyio._core._eventloop.threadlocals`).
    """
    try:
        from anyio._core._eventloop import threadlocals
    except ImportError:  # pragma: no cover - anyio comes with DSPy
        return None
    return getattr(threadlocals, "current_token", None)


def _with_token(token: Any, fn: Callable[[T], R], item: T) -> R:
    if token is None:
        return fn(item)
    from anyio._core._eventloop import threadlocals

    threadlocals.current_token = token
    try:
        return fn(item)
    finally:
        del threadlocals.current_token


def format_passages(passages: list[Passage]) -> str:
    """Number and delimit the passages, naming their sources, so steps can cite them and a
    passage's text (untrusted, with field markers defanged) cannot pass for the prompt's own."""
    blocks = []
    for number, passage in enumerate(passages, 1):
        source = f" source={defang(passage.source)}" if passage.source else ""
        blocks.append(f"<passage {number}{source}>\n{defang(passage.text)}\n</passage {number}>")
    return "\n".join(blocks)
