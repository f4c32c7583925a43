"""The load-aware thread count (`serc_dspy/cpu.py`): what other processes keep busy is read from
the kernel's counters, and the engines' threads fit the cores left free."""

import logging
import multiprocessing
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from serc_dspy import cpu

# Two readings of /proc/stat one second (100 ticks per core) apart on a 2-core machine.
BEFORE = """cpu  300 0 100 1600 0 0 0 0 0 0
cpu0 100 0 50 800 0 0 0 0 0 0
cpu1 200 0 50 800 0 0 0 0 0 0
intr 12345
"""
AFTER = """cpu  400 0 100 1700 0 0 0 0 0 0
cpu0 100 0 50 900 0 0 0 0 0 0
cpu1 300 0 50 800 0 0 0 0 0 0
intr 12399
"""


def test_busy_cores_counts_the_other_processes_ticks_on_the_allowed_cores():
    # core 1 was busy the whole second and core 0 idle: one core busy, none of it ours
    assert cpu.busy_cores(BEFORE, AFTER, {0, 1}, own_seconds=0.0, wall_seconds=1.0) == 1.0
    # the same ticks, 0.6 s of which this process spent itself
    assert cpu.busy_cores(BEFORE, AFTER, {0, 1}, own_seconds=0.6,
                          wall_seconds=1.0) == pytest.approx(0.4)
    # a process pinned to core 0 sees no neighbour
    assert cpu.busy_cores(BEFORE, AFTER, {0}, own_seconds=0.0, wall_seconds=1.0) == 0.0


@pytest.mark.parametrize(("cores", "busy", "threads"), [
    (2, None, 2),   # load unknown (no /proc/stat): every core
    (2, 0.0, 2),
    (2, 0.45, 2),   # background noise holds no core
    (2, 0.5, 1),
    (2, 1.0, 1),    # a busy loop next door
    (2, 3.0, 1),    # never fewer than one thread
    (8, 2.6, 5),
])
def test_threads_fit_the_cores_no_one_else_holds(cores, busy, threads):
    assert cpu.threads_for_load(cores, busy) == threads


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.mark.skipif(not os.path.exists("/proc/stat") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux's per-core counters and two cores")
def test_a_busy_loop_in_another_process_is_seen():
    spinner = multiprocessing.get_context("spawn").Process(target=_spin, args=(6.0,), daemon=True)
    spinner.start()
    try:
        time.sleep(1.5)  # the spawned interpreter starts, then spins
        assert cpu.cores_busy_elsewhere(seconds=1.0) >= 0.7
    finally:
        spinner.terminate()
        spinner.join()


def test_engine_threads_arriving_together_wait_for_one_sample(monkeypatch):
    samples = []

    def slow_sample():
        samples.append(1)
        time.sleep(0.2)
        return 0.0

    monkeypatch.setattr(cpu, "cores_busy_elsewhere", slow_sample)
    cpu.forget_load_sample()
    try:
        with ThreadPoolExecutor(8) as pool:
            chosen = set(pool.map(lambda _: cpu.load_aware_threads(), range(8)))
        assert samples == [1] and chosen == {cpu.available_cores()}
    finally:
        cpu.forget_load_sample()


def test_the_load_is_sampled_once_per_process_and_a_cut_is_logged(monkeypatch, caplog):
    samples = []
    monkeypatch.delenv(cpu.THREADS_ENV, raising=False)
    monkeypatch.setattr(cpu, "available_cores", lambda: 2)
    monkeypatch.setattr(cpu, "cores_busy_elsewhere", lambda: samples.append(1) or 1.0)
    cpu.forget_load_sample()
    try:
        with caplog.at_level(logging.WARNING, logger="serc_dspy"):
            assert cpu.default_threads() == 1
            assert cpu.default_threads() == 1
        assert samples == [1]  # a second choice would load a second engine server
        assert [r.levelno for r in caplog.records] == [logging.WARNING]
        monkeypatch.setenv(cpu.THREADS_ENV, "2")  # the user's setting wins over the load
        assert cpu.default_threads() == 2
    finally:
        cpu.forget_load_sample()
