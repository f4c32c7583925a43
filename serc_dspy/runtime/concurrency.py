"""Asynchronous plumbing any layer may use: blocking work off the event loop, a coroutine run
from synchronous code, and a gather that cancels the rest when one fails.

SERC's core is asynchronous (one bounded pool of LM calls serves a whole run, see `steps`), but
retrievers, classifier verifiers and sync-only LMs block, and callers are often synchronous.
These three helpers are what every such boundary needs; they sit in the vocabulary layer,
importing nothing from the package, so a retriever or a verifier can use them without reaching
up to the step layer.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

R = TypeVar("R")


async def in_thread(fn: Callable[..., R], *args: Any, abandon_on_cancel: bool = False,
                    **kwargs: Any) -> R:
    """Run blocking work (a retriever, a sync-only LM) in an AnyIO worker thread, in a copy of
    the caller's context, so the event loop keeps serving the run's other steps and DSPy's
    streaming can still reach the loop from the thread. With `abandon_on_cancel`, a
    cancelled (timed-out) caller goes on at once and the thread is left to finish alone: work
    that may hang (a user's verifier) must never hold a run past its deadline."""
    import anyio.to_thread

    context = contextvars.copy_context()
    return await anyio.to_thread.run_sync(
        functools.partial(context.run, fn, *args, **kwargs), limiter=_thread_limiter(),
        abandon_on_cancel=abandon_on_cancel)


_LIMITERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _thread_limiter():
    """One AnyIO limiter per event loop, wider than AnyIO's default of 40 threads."""
    import anyio

    loop = asyncio.get_running_loop()
    if loop not in _LIMITERS:
        _LIMITERS[loop] = anyio.CapacityLimiter(64)
    return _LIMITERS[loop]


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
