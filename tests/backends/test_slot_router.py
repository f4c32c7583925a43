"""The slot router: each stage's calls go to the slot whose KV cache already holds their
shared prefix; and the thread count's one setting."""

import os
import threading

import pytest

from serc_dspy.backends import embedded
from serc_dspy.backends.embedded import LlamaServerEngine, SlotRouter, prefix_key
from serc_dspy.cpu import default_threads
from serc_dspy.errors import UserError


def test_the_router_keeps_a_stage_on_the_slot_that_holds_its_prefix():
    router = SlotRouter(2)
    verify = router.acquire("verify")
    router.release(verify)
    fix = router.acquire("fix")
    assert fix != verify  # a new prefix takes the slot no other prefix lives in
    router.release(fix)
    for _ in range(3):  # one after another, each stage returns to its own slot
        assert (slot := router.acquire("verify")) == verify
        router.release(slot)
        assert (slot := router.acquire("fix")) == fix
        router.release(slot)


def test_concurrent_calls_of_one_stage_spread_over_free_slots_then_wait_for_their_own():
    router = SlotRouter(2)
    first = router.acquire("verify")
    second = router.acquire("verify")  # its slot is busy and another is free: batch there
    assert {first, second} == {0, 1}
    third = router.acquire("verify")  # every slot busy: queue on the prefix's latest slot
    assert third == second
    for slot in (first, second, third):
        router.release(slot)
    assert router.busy == [0, 0]


def test_the_engine_sends_each_request_to_the_routed_slot(monkeypatch, tmp_path):
    seen, lock = [], threading.Lock()

    class FakeServer:
        def handle_chat_completions(self, body):
            with lock:
                seen.append(body.get("id_slot"))
            return {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]}

    router = SlotRouter(2)
    monkeypatch.setattr(embedded, "llama_server", lambda *a, **k: (FakeServer(), router))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    engine = LlamaServerEngine(gguf)
    body = {"messages": [{"role": "system", "content": "judge"}, {"role": "user", "content": "1"}]}
    engine.send(body)
    engine.send({**body, "messages": body["messages"][:1] + [{"role": "user", "content": "2"}]})
    assert seen[0] == seen[1] is not None
    assert "id_slot" not in body  # the caller's body is not changed
    LlamaServerEngine(gguf, route_slots=False).send(body)
    assert seen[2] is None
    assert prefix_key(body) != prefix_key({**body, "messages": [{"role": "system",
                                                                 "content": "fix"}, {}]})


def test_serc_threads_sets_the_engines_thread_count(monkeypatch):
    monkeypatch.setenv("SERC_THREADS", "1")
    assert default_threads() == 1
    monkeypatch.setenv("SERC_THREADS", "two")
    with pytest.raises(UserError, match="SERC_THREADS"):
        default_threads()
    monkeypatch.delenv("SERC_THREADS")
    assert default_threads() == len(os.sched_getaffinity(0))
