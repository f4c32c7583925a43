"""The traced-step layer: slot order, fan-out failure, the failure policy and the sync driver."""

from __future__ import annotations

import asyncio

import pytest

from serc_dspy.core.errors import UserError
from serc_dspy.core.trace import Trace
from serc_dspy.runtime.steps import PrioritySlots, Run, gather, run_sync


def test_waiting_calls_are_served_deepest_stage_first_then_in_arrival_order():
    served = []

    async def scenario():
        slots = PrioritySlots(1)
        await slots.acquire(0)  # the one slot is taken

        async def wait(name, priority):
            await slots.acquire(priority)
            served.append(name)
            slots.release()

        tasks = [asyncio.ensure_future(wait(n, p))
                 for n, p in [("facts", 2), ("rewrite-a", 5), ("verify", 3), ("rewrite-b", 5)]]
        await asyncio.sleep(0)  # all four are queued
        slots.release()
        await asyncio.gather(*tasks)
        return slots.free

    assert asyncio.run(scenario()) == 1
    assert served == ["rewrite-a", "rewrite-b", "verify", "facts"]


def test_a_cancelled_waiter_never_swallows_a_slot():
    async def scenario():
        slots = PrioritySlots(1)
        await slots.acquire(0)
        cancelled = asyncio.ensure_future(slots.acquire(1))
        later = asyncio.ensure_future(slots.acquire(0))
        await asyncio.sleep(0)
        cancelled.cancel()
        slots.release()
        await asyncio.wait_for(later, 1)  # the slot went on to the next waiter
        slots.release()
        return slots.free

    assert asyncio.run(scenario()) == 1


def test_gather_cancels_the_rest_when_one_aborts_and_retrieves_every_error():
    finished = []

    async def slow():
        await asyncio.sleep(5)
        finished.append("slow")

    async def abort():
        raise UserError("bad configuration")

    async def also_fails():
        raise RuntimeError("an outage")

    with pytest.raises(UserError, match="bad configuration"):
        asyncio.run(gather(abort(), also_fails(), slow()))
    assert finished == []


def test_attempt_degrades_outages_and_lets_configuration_errors_through():
    run = Run(Trace())
    seen = []

    async def outage():
        raise ConnectionError("server down")

    async def misconfigured():
        raise UserError("no such stage")

    assert asyncio.run(run.attempt("detect", "check c0.0 failed", outage, "kept",
                                   failed=seen.append)) == "kept"
    assert seen == ["ConnectionError: server down"]
    assert [e.message for e in run.trace.errors] == ["check c0.0 failed: ConnectionError: "
                                                     "server down"]
    with pytest.raises(UserError):
        asyncio.run(run.attempt("detect", "x", misconfigured, None))


def test_run_sync_hands_back_the_coroutines_result_and_its_errors():
    async def double(x):
        return 2 * x

    async def broken():
        raise ValueError("nope")

    assert run_sync(double, 21) == 42
    with pytest.raises(ValueError, match="nope"):
        run_sync(broken)
