"""Importing serc_dspy and running the CLI makes no network call beyond the LM and retriever.

A subprocess replaces socket connects with a guard that records and refuses every address
outside loopback, then imports the package and runs a real CLI command against an
OpenAI-compatible server on loopback. The control run shows the guard does catch a call that
leaves the machine: a hosted provider's route.
"""

import json
import subprocess
import sys

from conftest import EXAMPLES, REPO
from fake_openai import FakeOpenAIServer

GUARD = r"""
import json, socket, sys
attempts = []
real_connect = socket.socket.connect
def guarded(self, address):
    host = address[0] if isinstance(address, tuple) else str(address)
    if not (host.startswith("127.") or host in ("localhost", "::1")):
        attempts.append(str(address))
        raise OSError("network disabled by test")
    return real_connect(self, address)
socket.socket.connect = guarded
real_getaddrinfo = socket.getaddrinfo
def guarded_getaddrinfo(host, *a, **k):
    if host not in (None, "localhost") and not str(host).startswith("127."):
        attempts.append(f"dns:{host}")
        raise OSError("network disabled by test")
    return real_getaddrinfo(host, *a, **k)
socket.getaddrinfo = guarded_getaddrinfo
import serc_dspy
from serc_dspy.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "attempts": attempts}), file=sys.stderr)
"""


def _run_cli(tmp_path, url, extra_env=None, lm=None):
    draft = tmp_path / "draft.txt"
    draft.write_text("Marie Curie won the Nobel Prize in Physics in 1903.")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **(extra_env or {})}
    result = subprocess.run(
        [sys.executable, "-c", GUARD, "correct", "--question", "Who was Marie Curie?",
         "--draft", str(draft), "--corpus", str(EXAMPLES / "corpus"), "--quiet",
         "--lm", lm or f"sglang={url}#fake"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
    )
    return json.loads(result.stderr.strip().splitlines()[-1]), result.stderr


def test_cli_run_makes_no_outside_network_call(tmp_path):
    with FakeOpenAIServer() as server:
        report, stderr = _run_cli(tmp_path, server.url)
        # The fake LM's queries ("x") find nothing in the corpus, so the run fails loudly
        # (exit 1) after using the LM: what matters here is where its connections went.
        assert report["code"] == 1 and "every search came back empty" in stderr, stderr
        assert server.requests, "the LM server must have been used"
    assert report["attempts"] == []


def test_the_guard_catches_a_call_that_leaves_the_machine(tmp_path):
    report, _ = _run_cli(tmp_path, "unused", {"OPENAI_API_KEY": "sk-test"},
                         lm="openai/gpt-4o-mini")
    assert report["attempts"], "control: a hosted provider's route must be caught"
