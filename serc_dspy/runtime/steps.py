"""The traced-step layer: every LM call, fan-out, progress report and degraded step goes here.

Programs (`programs/`) sit on top of it. A program declares, once, a table keyed by predictor
attribute name (`StepSpec`: the LM stage that `lms={...}` may override, and the usage key in
the trace); a `Run` then offers:

- `await run.call("fact_extractor", **inputs)`: the predictor's `acall` on its stage's LM,
  usage counted into the trace, at most `max_in_flight` calls of the run at once;
- `await run.map(phase, fn, items)`: fan out coroutines, reporting `phase` progress; the first
  abort (`UserError`) cancels the rest;
- `await run.attempt(phase, what, fn, fallback)`: the failure policy in one place. The
  `UserError` family (bad input or configuration) propagates; any other failure is logged as
  an error event naming `what`, and the step returns `fallback`.

The core is asynchronous, so one bounded pool of in-flight LM calls serves the whole run and
a sentence's work flows on as soon as its inputs exist (see `programs/serc/`). `run_sync`
drives it from synchronous code: on the caller's event loop when the caller is an AnyIO worker
thread (`dspy.streamify`, `dspy.asyncify`), else on a private loop.

Two pieces live below this module and are re-exported here, because they need no run:
- `lm_calls`: one predictor call with its usage counted (`tracked_call` / `tracked_acall`),
  which metrics (`evaluation/metrics/`) use too; usage is counted one way everywhere;
- `concurrency`: `in_thread`, `run_sync` and `gather`, which retrievers and verifiers use too.

This module imports only the trace and error vocabulary and those two.
"""

from __future__ import annotations

import asyncio
import heapq
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import dspy

from serc_dspy.core.errors import StepFailed, UserError, describe, redact
from serc_dspy.core.trace import Ruling, StepUsage, Trace
from serc_dspy.runtime.concurrency import gather, in_thread, run_sync
from serc_dspy.runtime.lm_calls import (
    Record,
    is_malformed,
    model_name,
    tracked_acall,
    tracked_call,
)

__all__ = [
    "STAGE_ORDER", "DeadlineExceeded", "PrioritySlots", "ProgressCallback", "Record", "Run",
    "StepSpec", "gather", "in_thread", "is_malformed", "model_name", "run_sync",
    "tracked_acall", "tracked_call",
]

T = TypeVar("T")
R = TypeVar("R")

ProgressCallback = Callable[[str, int, int], None]
"""Called as `progress(phase, done, total)`; the CLI prints it, library code never does."""


@dataclass(frozen=True)
class StepSpec:
    """What one predictor's calls are: the LM stage `lms={...}` can route (`verify`), and
    the key its usage is counted under in the trace (`verdicts`)."""

    stage: str
    usage: str


RETRY_TEMPERATURE = 0.3
"""A malformed reply is asked for once more, a little warmer: at temperature 0 the engine would
most likely write the same broken reply again."""


class DeadlineExceeded(StepFailed, TimeoutError):
    """The run's overall deadline passed before a step could start; the step degrades."""


STAGE_ORDER = ("generate", "firewall", "decompose", "verify", "correct", "rewrite", "polish")
"""Pipeline depth of each LM stage: when calls queue for a slot, the deepest goes first, so a
sentence that has come far is finished before new sentences start (its rewrite is what later
rewrites and the polish wait for)."""


class PrioritySlots:
    """At most `n` holders at once; waiters are served deepest stage first, then in arrival
    order. (`asyncio.Semaphore` serves strictly in arrival order.)"""

    def __init__(self, n: int):
        self.free = n
        self._waiters: list[tuple[int, int, asyncio.Future]] = []
        self._arrivals = 0

    async def acquire(self, priority: int) -> None:
        if self.free > 0 and not self._waiters:
            self.free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._arrivals += 1
        heapq.heappush(self._waiters, (-priority, self._arrivals, waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot just as it was cancelled: pass it on
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, waiter = heapq.heappop(self._waiters)
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


@dataclass
class Run:
    """One decoding call's state and its step layer, so one program object can serve
    concurrent calls safely."""

    trace: Trace
    predictors: Mapping[str, dspy.Predict] = field(default_factory=dict)
    table: Mapping[str, StepSpec] = field(default_factory=dict)
    lms: Mapping[str, Any] = field(default_factory=dict)
    adapter: Any = None
    max_in_flight: int = 4
    progress: ProgressCallback | None = None
    deadline: float | None = None
    """`time.monotonic()` after which no new LM call starts (steps then degrade)."""
    deadline_s: float | None = None
    rules: Any = None
    """The run's `serc_dspy.rules.RuleSet` (which rules are on), for programs that have rules."""
    serial_stages: frozenset[str] = frozenset()
    """Stages whose calls run one at a time (see `call`)."""
    raw_draft: str | None = None
    """The caller's draft as given, before `text.defang`: the answer's untouched text is
    returned as the caller wrote it."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    _slots: PrioritySlots | None = None
    _gates: dict[str, asyncio.Lock] = field(default_factory=dict)
    _counts: dict[str, list[int]] = field(default_factory=dict)

    def seconds_left(self) -> float | None:
        """Seconds until the run's deadline (None without one): a bound for work that the step
        layer does not time itself (a claim verifier)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    # -- events, rulings and progress --------------------------------------------------------
    def log(self, phase: str, message: str, kind: str = "info") -> None:
        with self.lock:
            self.trace.log(phase, redact(message), kind)

    def on(self, rule: str) -> bool:
        """Whether the named rule is on for this run (`serc_dspy.rules.RuleSet.on`)."""
        return self.rules.on(rule)

    def rule(self, rule: str, node: str = "", before: str | None = None,
             after: str | None = None, detail: str = "") -> None:
        """Record one firing of a named rule as a `Ruling` in the trace."""
        ruling = Ruling(rule=rule, node=node, before=before, after=after,
                        detail=redact(detail) if detail else "")
        with self.lock:
            self.trace.rulings.append(ruling)

    def expect(self, phase: str, n: int) -> None:
        """`n` more items of `phase` are on their way (its progress total grows)."""
        with self.lock:
            done, total = self._counts.setdefault(phase, [0, 0])
            self._counts[phase][1] = total + n
        if total == 0:
            self.report(phase, done, total + n)

    def advance(self, phase: str) -> None:
        with self.lock:
            counts = self._counts.setdefault(phase, [0, 1])
            counts[0] += 1
            done, total = counts
        self.report(phase, done, total)

    def report(self, phase: str, done: int, total: int) -> None:
        """Progress of a phase: to the `progress` callback, and as a `dspy.streamify` status
        message when the run is streamed (a phase's start and its end)."""
        if self.progress is not None:
            self.progress(phase, done, total)
        stream = dspy.settings.send_stream
        if stream is not None and (done == 0 or done == total):
            state = "started" if done == 0 else "done"
            _send_status(stream, f"{phase}: {state} ({done}/{total})")

    # -- LM calls ---------------------------------------------------------------------------
    def lm_for(self, name: str) -> Any:
        """The LM a predictor runs on: its own entry in `lms`, else its stage's, else the
        context's (None)."""
        if name in self.lms:
            return self.lms[name]
        return self.lms.get(self.table[name].stage)

    async def call(self, name: str, **inputs: Any) -> Any:
        """One call of the predictor `name` (see the module docs).

        A stage in `serial_stages` sends its calls one after another. A llama.cpp slot keeps
        the prompt it last processed, but a prefix is shared only with a later call on that
        slot: calls of one stage that start together each process the stage's instructions
        and demos again, in a slot of their own (measured in `docs/speed.md`). A waiting call
        holds no slot, so other stages go on meanwhile."""
        stage = self.table[name].stage
        if stage not in self.serial_stages:
            return await self._call(name, **inputs)
        gate = self._gates.setdefault(stage, asyncio.Lock())
        async with gate:
            return await self._call(name, **inputs)

    async def _call(self, name: str, **inputs: Any) -> Any:
        spec, predictor = self.table[name], self.predictors[name]
        if self._slots is None:
            self._slots = PrioritySlots(self.max_in_flight)
        depth = STAGE_ORDER.index(spec.stage) if spec.stage in STAGE_ORDER else 0
        await self._slots.acquire(depth)
        try:
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise DeadlineExceeded(f"the run's deadline of {self.deadline_s:g}s has "
                                       f"passed; {spec.usage} was not started")

            def record(model: str, usage: StepUsage) -> None:
                with self.lock:
                    self.trace.usage.record(spec.usage, model, usage)

            started = time.monotonic()
            try:
                return await tracked_acall(predictor, record, lm=self.lm_for(name),
                                           adapter=self.adapter, **inputs)
            except Exception as exc:
                if not is_malformed(exc):
                    raise
                self.log(spec.stage, f"{spec.usage}: the reply was not complete, valid output "
                         f"({describe(exc)[:160]}); asked once more", "fallback")
                config = {**(inputs.get("config") or {}), "temperature": max(
                    RETRY_TEMPERATURE, (inputs.get("config") or {}).get("temperature") or 0.0)}
                return await tracked_acall(predictor, record, lm=self.lm_for(name),
                                           adapter=self.adapter, **{**inputs, "config": config})
            finally:
                with self.lock:
                    self.trace.usage.record(spec.usage, model_name(self.lm_for(name)
                                                                   or dspy.settings.lm),
                                            StepUsage(seconds=time.monotonic() - started))
        finally:
            self._slots.release()

    # -- fan-out and failure policy ---------------------------------------------------------
    async def map(self, phase: str, fn: Callable[[T], Awaitable[R]],
                  items: Iterable[T]) -> list[R]:
        """`[await fn(item) for item in items]`, all at once (the LM calls inside are bounded
        by `max_in_flight`), in order, reporting `phase` progress."""
        items = list(items)
        if not items:
            return []
        self.expect(phase, len(items))

        async def one(item: T) -> R:
            result = await fn(item)
            self.advance(phase)
            return result

        return await gather(*(one(item) for item in items))

    async def attempt(self, phase: str, what: str, fn: Callable[[], Awaitable[R]],
                      fallback: T, *, failed: Callable[[str], Any] | None = None) -> R | T:
        """`await fn()`, or `fallback` when it fails: an error event says `what: error`, and
        `failed(error)` may record it where the step keeps its state. The `UserError` family,
        and cancellation, propagate."""
        try:
            return await fn()
        except UserError:
            raise  # configuration errors abort; only outages degrade
        except Exception as exc:
            error = describe(exc)
            if failed is not None:
                failed(error)
            self.log(phase, f"{what}: {error}", "error")
            return fallback

    async def offload(self, fn: Callable[..., R], *args: Any) -> R:
        """Blocking work (retrieval) off the event loop."""
        return await in_thread(fn, *args)


def _send_status(stream: Any, message: str) -> None:
    from dspy.streaming.messages import StatusMessage, sync_send_to_stream

    status = StatusMessage(message)
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # a thread of our own: DSPy's own route to the loop
        sync_send_to_stream(stream, status)
        return
    try:  # on the loop that reads the stream: never block it
        stream.send_nowait(status)
    except Exception:  # the buffer is full: send when the reader catches up
        asyncio.ensure_future(stream.send(status))
