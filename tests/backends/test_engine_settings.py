"""The embedded engine's CPU settings: the thread count's one source (`SERC_THREADS`) and the
checked llama.cpp knobs."""

import os

import pytest

from serc_dspy.backends.chat import BackendError
from serc_dspy.backends.embedded import LlamaServerEngine
from serc_dspy.core.errors import UserError
from serc_dspy.runtime.cpu import DEFAULT_POLL, default_poll, default_threads


def test_serc_threads_sets_the_engines_thread_count(monkeypatch):
    monkeypatch.setenv("SERC_THREADS", "1")
    assert default_threads() == 1
    for bad in ("two", "0", "-1"):
        monkeypatch.setenv("SERC_THREADS", bad)
        with pytest.raises(UserError, match="SERC_THREADS"):
            default_threads()
    monkeypatch.delenv("SERC_THREADS")
    assert default_threads() == len(os.sched_getaffinity(0))


def test_thread_and_poll_settings_are_checked_and_saved(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(BackendError, match="poll"):
        LlamaServerEngine(gguf, poll=101)
    with pytest.raises(BackendError, match="n_threads"):
        LlamaServerEngine(gguf, n_threads=0)
    engine = LlamaServerEngine(gguf, n_threads=1, poll=0)
    again = LlamaServerEngine.load_state(engine.dump_state())
    assert (again.n_threads, again.poll) == (1, 0)


def test_serc_poll_sets_the_busy_wait_level_else_llama_cpps_own(monkeypatch):
    monkeypatch.delenv("SERC_POLL", raising=False)
    assert default_poll() == DEFAULT_POLL == 50
    monkeypatch.setenv("SERC_POLL", "0")
    assert default_poll() == 0
    for bad in ("fifty", "101", "-1"):
        monkeypatch.setenv("SERC_POLL", bad)
        with pytest.raises(UserError, match="SERC_POLL"):
            default_poll()
