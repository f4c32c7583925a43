"""How many CPU threads the local engines (llama.cpp, onnxruntime) use.

One place decides it, so the LM and the dense retriever never disagree: `SERC_THREADS` when it
is set, else every core this process may run on. On a machine another process keeps busy,
fewer threads than cores can be faster: llama.cpp's worker threads wait for each other at
every step, so one descheduled thread stalls them all (`benchmarks/engine_tokens.py --busy`
measures it). How long a waiting thread spins before it sleeps (`SERC_POLL`) is decided here
too.
"""

from __future__ import annotations

import os

from serc_dspy.core.errors import UserError

THREADS_ENV = "SERC_THREADS"
POLL_ENV = "SERC_POLL"
DEFAULT_POLL = 50
"""llama.cpp's busy-wait level (0-100) for its worker threads between steps: llama.cpp's own
default. 0 (sleep at once) was measured on the main job with one core busy: 0.86x the time in
one run, 1.00x in the next, so the default did not change (docs/speed.md)."""


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS and Windows have no sched_getaffinity
        return max(1, os.cpu_count() or 1)


def _whole_number(name: str, low: int, high: int | None, meaning: str) -> int | None:
    """The environment variable `name` as a whole number in [low, high]; None when unset."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    ascii_digits = value.isascii() and value.isdigit()  # "²", "١٢" and "１２" are refused
    if not ascii_digits or len(value) > 6 or int(value) < low or \
            high is not None and int(value) > high:
        bound = f"of at least {low}" if high is None else f"from {low} to {high}"
        raise UserError(f"{name} must be a whole number {bound} ({meaning}), got {value!r}")
    return int(value)


def default_threads() -> int:
    """`SERC_THREADS` (a whole number of at least 1) when set, else `available_cores()`."""
    threads = _whole_number(THREADS_ENV, 1, None, "engine threads")
    return available_cores() if threads is None else threads


def default_poll() -> int:
    """`SERC_POLL` (a whole number from 0 to 100) when set, else `DEFAULT_POLL`."""
    poll = _whole_number(POLL_ENV, 0, 100, "llama.cpp's busy-wait level")
    return DEFAULT_POLL if poll is None else poll
