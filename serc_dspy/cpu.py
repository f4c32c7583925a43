"""How many CPU threads the local engines (llama.cpp, onnxruntime) use.

One place decides it, so the LM and the dense retriever never disagree: `SERC_THREADS` when it
is set, else every core this process may run on. On a machine another process keeps busy,
fewer threads than cores can be faster: llama.cpp's worker threads wait for each other at
every step, so one descheduled thread stalls them all (`benchmarks/engine_tokens.py --busy`
measures it).
"""

from __future__ import annotations

import os

from serc_dspy.errors import UserError

THREADS_ENV = "SERC_THREADS"


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS and Windows have no sched_getaffinity
        return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """`SERC_THREADS` (a whole number of at least 1) when set, else `available_cores()`."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return available_cores()
    if not value.isdigit() or int(value) < 1:
        raise UserError(f"{THREADS_ENV} must be a whole number of threads of at least 1, "
                        f"got {value!r}")
    return int(value)
