"""The traced-step layer: every LM call, fan-out, progress report and degraded step goes here.

Programs (`programs/`), metrics (`evaluation/metrics.py`) and compilers sit on top of it. A
program declares, once, a table keyed by predictor attribute name (`StepSpec`: the LM stage
that `lms={...}` may override, and the usage key in the trace); a `Run` then offers:

- `await run.call("fact_extractor", **inputs)`: the predictor's `acall` on its stage's LM,
  usage counted into the trace, at most `max_in_flight` calls of the run at once;
- `await run.map(phase, fn, items)`: fan out coroutines, reporting `phase` progress; the first
  abort (`UserError`) cancels the rest;
- `await run.attempt(phase, what, fn, fallback)`: the failure policy in one place. The
  `UserError` family (bad input or configuration) propagates; any other failure is logged as
  an error event naming `what`, and the step returns `fallback`.

The core is asynchronous, so one bounded pool of in-flight LM calls serves the whole run and
a sentence's work flows on as soon as its inputs exist (see `programs/serc.py`). `run_sync`
drives it from synchronous code: on the caller's event loop when the caller is an AnyIO worker
thread (`dspy.streamify`, `dspy.asyncify`), else on a private loop.

Usage is counted one way everywhere (`tracked_call` / `tracked_acall`):
- a usage tracker of our own is nested in any outer one (`dspy.configure(track_usage=True)`,
  `with dspy.track_usage()`, a tracked parent program): DSPy rolls ours up into the outer one
  on exit, so an outer tracker neither hides these calls nor loses them;
- a call DSPy served from its cache spends no tokens but is still a call (`cached=1`);
- a call that raised is a call (`failed=1`), recorded before the error propagates.

This module imports only the trace vocabulary and the error vocabulary.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import heapq
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import dspy
from dspy.utils.usage_tracker import track_usage

from serc_dspy.errors import (
    KeyRejected,
    MalformedOutput,
    StepFailed,
    UserError,
    caused_by,
    describe,
    one_line,
    redact,
)
from serc_dspy.trace import Ruling, StepUsage, Trace

T = TypeVar("T")
R = TypeVar("R")

Record = Callable[[str, StepUsage], None]
"""`record(model, usage)`: where a call's usage goes (a trace's `Usage.record` per step)."""

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


def is_malformed(exc: BaseException) -> bool:
    """A reply that could not be read as its signature's output (cut-off or broken JSON)."""
    from dspy.utils.exceptions import AdapterParseError

    return caused_by(exc, MalformedOutput) or caused_by(exc, AdapterParseError)


class DeadlineExceeded(StepFailed, TimeoutError):
    """The run's overall deadline passed before a step could start; the step degrades."""


def model_name(lm: Any) -> str:
    return str(getattr(lm, "model", None) or "unknown")


def _settings(lm: Any, adapter: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if lm is not None:
        settings["lm"] = lm
    if adapter is not None:
        settings["adapter"] = adapter
    return settings


def _report_usage(tracker: Any, record: Record, model: str) -> None:
    entries = [(name, entry) for name, items in tracker.usage_data.items() for entry in items]
    if not entries:  # served from DSPy's cache: a call, but no tokens spent
        record(model, StepUsage(calls=1, cached=1))
    for name, entry in entries:
        details = entry.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        record(name, StepUsage(calls=1, prompt_tokens=int(entry.get("prompt_tokens") or 0),
                               cached_prompt_tokens=int(cached or 0),
                               completion_tokens=int(entry.get("completion_tokens") or 0)))


def tracked_call(predictor: dspy.Predict, record: Record, *, lm: Any = None,
                 adapter: Any = None, **inputs: Any) -> Any:
    """Run `predictor(**inputs)` (on `lm` / `adapter` when given, else the context's) and
    report its usage to `record` once per model it used (see the module docs)."""
    settings = _settings(lm, adapter)
    model = model_name(settings.get("lm") or dspy.settings.lm)
    with dspy.context(**settings), track_usage() as tracker:
        try:
            prediction = predictor(**inputs)
        except Exception as exc:
            record(model, StepUsage(calls=1, failed=1))
            _raise_rejected_key(exc)
            raise
    _report_usage(tracker, record, model)
    return prediction


def _raise_rejected_key(exc: Exception) -> None:
    """A provider's rejected key (DSPy's `LMAuthError`, HTTP 401/403, from any backend) is a
    configuration error: raised as `KeyRejected` (redacted), which aborts the run."""
    if isinstance(exc, dspy.LMAuthError) and not isinstance(exc, UserError):
        status = getattr(exc, "status", None)
        raise KeyRejected(f"the LM rejected its API key{f' (HTTP {status})' if status else ''}: "
                          f"{one_line(exc)}") from exc


_SYNC_ONLY: weakref.WeakSet = weakref.WeakSet()
"""LMs seen without an async half (a custom engine without `async_engine=`, a BaseLM subclass
with only `forward`): they are called in a worker thread instead."""
_NO_ASYNC = (NotImplementedError, dspy.LMUnsupportedFeatureError)


async def tracked_acall(predictor: dspy.Predict, record: Record, *, lm: Any = None,
                        adapter: Any = None, **inputs: Any) -> Any:
    """The async twin of `tracked_call`: `await predictor.acall(**inputs)`, usage counted the
    same way. An LM without an async half runs the sync call in a worker thread."""
    settings = _settings(lm, adapter)
    target = settings.get("lm") or dspy.settings.lm
    model = model_name(target)
    with dspy.context(**settings), track_usage() as tracker:
        call = asyncio.ensure_future(_acall(predictor, target, inputs))
        try:
            prediction = await asyncio.shield(call)
        except asyncio.CancelledError:
            # Cancelled (a sibling failed) while the engine serves the call: the engine
            # finishes it anyway, so wait for it, count it with its tokens, then stop.
            await _settle(call)
            _report_cancelled(call, tracker, record, model)
            raise
        except Exception as exc:
            record(model, StepUsage(calls=1, failed=1))
            _raise_rejected_key(exc)
            raise
    _report_usage(tracker, record, model)
    return prediction


async def _settle(call: asyncio.Future) -> None:
    try:
        await call
    except BaseException:  # its outcome is counted, not raised: the caller is cancelled
        pass


def _report_cancelled(call: asyncio.Future, tracker: Any, record: Record, model: str) -> None:
    if call.cancelled() or call.exception() is not None:
        record(model, StepUsage(calls=1, failed=1))
        return
    _report_usage(tracker, record, model)
    record(model, StepUsage(cancelled=1))


async def _acall(predictor: dspy.Predict, lm: Any, inputs: dict[str, Any]) -> Any:
    if lm is not None and lm in _SYNC_ONLY:
        return await in_thread(predictor, **inputs)
    try:
        return await predictor.acall(**inputs)
    except _NO_ASYNC:
        if lm is None:
            raise
        _SYNC_ONLY.add(lm)
        return await in_thread(predictor, **inputs)


async def in_thread(fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """Run blocking work (a retriever, a sync-only LM) in an AnyIO worker thread, in a copy of
    the caller's context, so the event loop keeps serving the run's other steps and DSPy's
    streaming can still reach the loop from the thread."""
    import anyio.to_thread

    context = contextvars.copy_context()
    return await anyio.to_thread.run_sync(
        functools.partial(context.run, fn, *args, **kwargs), limiter=_thread_limiter())


_LIMITERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _thread_limiter():
    """One AnyIO limiter per event loop, wider than AnyIO's default of 40 threads."""
    import anyio

    loop = asyncio.get_running_loop()
    if loop not in _LIMITERS:
        _LIMITERS[loop] = anyio.CapacityLimiter(64)
    return _LIMITERS[loop]


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
    lock: threading.Lock = field(default_factory=threading.Lock)
    _slots: PrioritySlots | None = None
    _counts: dict[str, list[int]] = field(default_factory=dict)

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
        """One call of the predictor `name` (see the module docs)."""
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


async def gather(*coroutines: Awaitable[R]) -> list[R]:
    """`asyncio.gather` that cancels the others when one raises, then raises that error."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        pending = [t for t in tasks if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
    errors = [task.exception() for task in tasks if not task.cancelled()]  # all retrieved
    first = next((error for error in errors if error is not None), None)
    if first is not None:
        raise first
    return [task.result() for task in tasks]


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


def run_sync(fn: Callable[..., Awaitable[R]], *args: Any) -> R:
    """Run the coroutine `fn(*args)` to completion from synchronous code.

    - In an AnyIO worker thread (`dspy.streamify` and `dspy.asyncify` run sync programs in
      one), on the caller's event loop: streaming then works as in an async program.
    - With an event loop already running in this thread (a notebook cell), on a private loop
      in a helper thread: `asyncio.run` is never required of the caller.
    - Otherwise on a private loop in this thread.

    The coroutine runs in a copy of the caller's context (DSPy's settings travel with it).
    """
    context = contextvars.copy_context()

    async def in_context() -> R:
        return await context.run(asyncio.ensure_future, fn(*args))

    if _anyio_token() is not None:
        import anyio.from_thread

        return anyio.from_thread.run(in_context)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(in_context())
    result: list[Any] = []

    def helper() -> None:
        try:
            result.append((True, asyncio.run(in_context())))
        except BaseException as exc:  # handed to the caller's thread
            result.append((False, exc))

    thread = threading.Thread(target=helper, name="serc-run", daemon=True)
    thread.start()
    thread.join()
    ok, value = result[0]
    if not ok:
        raise value
    return value


def _anyio_token() -> Any:
    """AnyIO's way back to the event loop from this thread, when it is a worker thread."""
    try:
        from anyio._core._eventloop import threadlocals
    except ImportError:  # pragma: no cover - anyio comes with DSPy
        return None
    return getattr(threadlocals, "current_token", None)
