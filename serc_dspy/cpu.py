"""How many CPU threads the local engines (llama.cpp, onnxruntime) use.

One place decides it, so the LM and the dense retriever never disagree: `SERC_THREADS` when it
is set, else every core this process may run on that no other process keeps busy. llama.cpp's
worker threads wait for each other at every step, so one thread descheduled by a neighbour
stalls them all: on 2 cores with one kept busy, one thread decoded the main job in 419 s and
two in 471 s, while on the idle machine two took 258 s and one 394 s
(`benchmarks/engine_tokens.py --busy`, `docs/speed.md`). So the load is sampled once, when the
first engine of the process starts, and the threads fit the cores that are free then.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
import time

from serc_dspy.errors import UserError

THREADS_ENV = "SERC_THREADS"

LOAD_SAMPLE_SECONDS = 0.5
"""How long the other processes' CPU use is sampled before the thread count is chosen: long
enough to see a busy neighbour through the scheduler's tick, short beside an engine start."""

BUSY_CORE_SHARE = 0.5
"""Other processes hold a core once they use at least this share of one: a busy loop uses 1.0,
an idle desktop's background work well under 0.2."""

logger = logging.getLogger("serc_dspy")


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    return len(_allowed_cpus()) or max(1, os.cpu_count() or 1)


def _allowed_cpus() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no sched_getaffinity
        return set()


def default_threads() -> int:
    """`SERC_THREADS` (a whole number of at least 1) when set, else `load_aware_threads()`."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return load_aware_threads()
    if not value.isdigit() or int(value) < 1:
        raise UserError(f"{THREADS_ENV} must be a whole number of threads of at least 1, "
                        f"got {value!r}")
    return int(value)


def load_aware_threads() -> int:
    """The cores not held by other processes, sampled once per process.

    Once, because the embedded engine loads one server per thread count: a second choice in
    the same process would load the model's weights a second time. Concurrent callers (the
    check nodes' threads reach the engine together) wait for the one sample.
    """
    with _sample_lock:
        return _sampled_threads()


def forget_load_sample() -> None:
    """The next `load_aware_threads()` samples the load again (for tests)."""
    _sampled_threads.cache_clear()


_sample_lock = threading.Lock()


@functools.cache
def _sampled_threads() -> int:
    cores = available_cores()
    busy = cores_busy_elsewhere()
    threads = threads_for_load(cores, busy)
    if threads < cores:
        logger.warning("other processes keep %.1f of this process's %d cores busy: the local "
                       "engines use %d thread(s); set %s to choose", busy, cores, threads,
                       THREADS_ENV)
    return threads


def threads_for_load(cores: int, busy_elsewhere: float | None) -> int:
    """One thread per core that other processes do not hold (at least one); every core when
    the load is unknown."""
    if busy_elsewhere is None:
        return cores
    held = math.floor(busy_elsewhere + 1 - BUSY_CORE_SHARE)  # a core from BUSY_CORE_SHARE on
    return max(1, cores - held)


def cores_busy_elsewhere(seconds: float = LOAD_SAMPLE_SECONDS) -> float | None:
    """How many of this process's cores other processes kept busy over `seconds`.

    Read from the kernel's per-core counters (`/proc/stat`, Linux), less this process's own
    CPU time. None where there are no such counters.
    """
    cpus = _allowed_cpus()
    before = _read_proc_stat()
    if before is None or not cpus:
        return None
    own_before, wall_before = _own_cpu_seconds(), time.monotonic()
    time.sleep(seconds)
    after = _read_proc_stat()
    if after is None:
        return None
    own = _own_cpu_seconds() - own_before
    return busy_cores(before, after, cpus, own_seconds=own,
                      wall_seconds=time.monotonic() - wall_before)


def busy_cores(before: str, after: str, cpus: set[int], *, own_seconds: float,
               wall_seconds: float) -> float:
    """Cores kept busy by others between two `/proc/stat` readings, on the cores `cpus`."""
    busy = total = 0
    then, now = _per_cpu_ticks(before), _per_cpu_ticks(after)
    for cpu in cpus & then.keys() & now.keys():
        busy += now[cpu][0] - then[cpu][0]
        total += now[cpu][1] - then[cpu][1]
    if total <= 0 or wall_seconds <= 0:
        return 0.0
    share = busy / total * len(cpus) - own_seconds / wall_seconds
    return max(0.0, share)


def _per_cpu_ticks(stat: str) -> dict[int, tuple[int, int]]:
    """{core: (busy ticks, all ticks)} from `/proc/stat`; idle and iowait are not busy."""
    ticks = {}
    for line in stat.splitlines():
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu" or not name[3:].isdigit():
            continue
        values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
        idle = values[3] + (values[4] if len(values) > 4 else 0)
        ticks[int(name[3:])] = (sum(values) - idle, sum(values))
    return ticks


def _read_proc_stat() -> str | None:
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            return handle.read()
    except OSError:
        return None


def _own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system
