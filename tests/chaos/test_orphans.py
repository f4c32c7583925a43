"""A client killed while it holds a managed server never leaves the server running."""

import os
import signal
import subprocess
import sys
import time

import pytest

CLIENT = r"""
import sys, time
from serc_dspy.backends.launcher import free_port, managed_server
port = free_port()
command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
with managed_server(command, port=port, ready_path="/", timeout=30) as server:
    print(server.process.pid, flush=True)
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is dead for our purpose
        return stat.read().split()[2] != "Z"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_the_server_dies_with_its_client(sig):
    client = subprocess.Popen([sys.executable, "-c", CLIENT], stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(client.stdout.readline())
        assert _alive(server_pid)
        client.send_signal(sig)
        client.wait(timeout=30)
        deadline = time.monotonic() + 15
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(server_pid), f"server {server_pid} outlived its client ({sig.name})"
    finally:
        client.kill()
        client.wait()


def test_workers_go_even_when_the_leader_died_first(tmp_path):
    from serc_dspy.backends.launcher import free_port, managed_server

    port = free_port()
    leader = f"{sys.executable} -m http.server {port} --bind 127.0.0.1 & wait"
    with managed_server(["sh", "-c", leader], port=port, ready_path="/", timeout=30,
                        log_path=tmp_path / "log") as server:
        group = server.process.pid
        os.kill(group, signal.SIGKILL)  # the leader dies; its worker (the real server) stays
        server.process.wait(5)
        os.killpg(group, 0)  # the worker is still in the group
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail("the server's worker outlived the managed_server block")
