"""The SGLang code path over real HTTP on loopback, and the managed launcher's guarantees."""

import os
import socket
import sys
from pathlib import Path

import dspy
import pytest
from conftest import EXAMPLES

from serc_dspy import SERC, LocalCorpus
from serc_dspy.backends import find_smollm2_gguf, sglang_lm
from serc_dspy.backends.chat import HttpChatEngine
from serc_dspy.backends.launcher import (
    PortInUse,
    ServerDied,
    ServerNotInstalled,
    ServerTimeout,
    free_port,
    managed_server,
    sglang_command,
    sglang_server,
)

SERVER_SCRIPT = Path(__file__).with_name("xllamacpp_server.py")
DRAFT = "In 1898 she and Pierre discovered two new elements, polonium and radium."


def assert_gone(process):
    assert process.poll() is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)


@pytest.mark.embedded
def test_serc_over_http_against_a_managed_llama_cpp_server(tmp_path, monkeypatch):
    """The SGLang code path against llama.cpp's real server, which takes json_schema natively."""
    sent = []
    real_send = HttpChatEngine.send

    def record(engine, body):
        sent.append(body)
        return real_send(engine, body)

    monkeypatch.setattr(HttpChatEngine, "send", record)
    port = free_port()
    command = [sys.executable, str(SERVER_SCRIPT), "--model", str(find_smollm2_gguf()),
               "--alias", "smollm2", "--port", str(port)]
    with managed_server(command, port=port, timeout=120, log_path=tmp_path / "server.log") as srv:
        # transport, not speed: on a machine another model process keeps busy, one CPU call
        # ran past the default 120 s timeout
        lm = sglang_lm(srv.url, "smollm2", max_tokens=256, timeout=600)
        program = SERC(retriever=LocalCorpus(EXAMPLES / "corpus"), max_workers=2,
                       queries="facts", evidence="passages", verdicts="fact", top_k=2)
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            prediction = program(question="Tell me a bio of Marie Curie.", draft=DRAFT)
        process = srv.process
    assert_gone(process)

    trace = prediction.trace
    # The server took every request (no HTTP error, nothing unreachable); what SmolLM2 says in
    # them is not the point here.
    assert not [e for e in trace.errors if "HTTP " in e.message or "cannot reach" in e.message]
    assert trace.facts and trace.checks
    assert len(sent) == trace.usage.total.calls > trace.usage.total.failed
    for body in sent:
        assert body["model"] == "smollm2"
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"]["properties"]
        assert body["max_tokens"] == 256
        assert body["temperature"] in (0.0, 0.1, 0.5)
    usage = trace.usage.models["sglang/smollm2"]
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0


def test_server_is_stopped_when_the_body_raises(tmp_path):
    port = free_port()
    command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    with pytest.raises(RuntimeError, match="boom"):
        with managed_server(command, port=port, ready_path="/", timeout=30,
                            log_path=tmp_path / "log") as srv:
            process = srv.process
            assert process.poll() is None
            raise RuntimeError("boom")
    assert_gone(process)


def test_a_command_that_exits_at_once_raises_server_died(tmp_path):
    command = [sys.executable, "-c", "print('bad flag'); raise SystemExit(3)"]
    with pytest.raises(ServerDied, match="status 3") as info:
        with managed_server(command, port=free_port(), timeout=30, log_path=tmp_path / "log"):
            pass
    assert "bad flag" in str(info.value)


def test_a_server_that_never_answers_times_out_and_is_killed(tmp_path, monkeypatch):
    started = []
    import subprocess

    real_popen = subprocess.Popen

    def spy(*args, **kwargs):
        process = real_popen(*args, **kwargs)
        started.append(process)
        return process

    monkeypatch.setattr(subprocess, "Popen", spy)
    command = [sys.executable, "-c", "import time; time.sleep(120)"]
    with pytest.raises(ServerTimeout, match="did not answer"):
        with managed_server(command, port=free_port(), timeout=1.0, grace=2.0,
                            log_path=tmp_path / "log"):
            pass
    assert len(started) == 1
    assert_gone(started[0])


def test_a_taken_port_is_refused_before_anything_starts(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(PortInUse, match=f"port {port}"):
            with managed_server([sys.executable, "-c", "raise SystemExit(0)"], port=port,
                                log_path=tmp_path / "log"):
                pass
    assert not (tmp_path / "log").exists()


def test_sglang_command_and_missing_sglang():
    command = sglang_command("meta-llama/Meta-Llama-3-8B-Instruct", port=30001, tp_size=2,
                             extra_args=["--mem-fraction-static", "0.8"])
    assert command[1:3] == ["-m", "sglang.launch_server"]
    assert command[command.index("--tp-size") + 1] == "2"
    assert "--enable-cache-report" in command  # the trace records SGLang's cached tokens
    assert command[-2:] == ["--mem-fraction-static", "0.8"]
    try:
        import sglang  # noqa: F401
    except ImportError:
        with pytest.raises(ServerNotInstalled, match="pip install"):
            sglang_server("m")
