"""The chaos suite, keys, configuration and CLI edges: each test injects one fault and
asserts the promise that must hold: what stays in the answer or output, the status and event
the trace carries, the exit code, and that no secret, nor any prefix of one of 8 or more
characters, appears in any output. Scripted LMs and loopback servers only; runs in seconds."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from pathlib import Path

import dspy
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "programs"))

from conftest import EXAMPLES  # noqa: E402
from fake_openai import minimal_instance  # noqa: E402
from faults import QUESTION  # noqa: E402
from scripted import CountingRetriever, scripted_lm  # noqa: E402
from test_serc import DRAFT, handlers  # noqa: E402

from serc_dspy import SERC, LocalCorpus  # noqa: E402
from serc_dspy.backends.servers import openai_compatible_lm  # noqa: E402
from serc_dspy.cli import main  # noqa: E402
from serc_dspy.core.errors import MIN_SECRET_CHARS, UserError, describe, redact  # noqa: E402
from serc_dspy.evaluation.runner import read_results  # noqa: E402
from serc_dspy.retrieval.base import RetrievalError, as_retriever  # noqa: E402

SECRET = "sk-Zq7pW3xK9mB2vN8rT4yL6cJ1hF5dG0aE"
CORPUS = str(EXAMPLES / "corpus")
ENTITIES = ["Marie Curie", "Pierre Curie", "Irène Joliot-Curie", "Ève Curie",
            "Paul Langevin", "Henri Becquerel", "Gabriel Lippmann", "Ernest Rutherford"]


def leaked(blob: str, secret: str = SECRET) -> bool:
    """Whether the key, or any prefix of it of MIN_SECRET_CHARS or more, is in `blob`."""
    return secret[:MIN_SECRET_CHARS] in blob


def outputs(captured, *paths: Path) -> str:
    """stdout, stderr and every file written (results, meta, traces) as one string."""
    files = [p.read_text(encoding="utf-8", errors="replace") for p in paths if p.is_file()]
    return captured.out + captured.err + "".join(files)


class KeyServer:
    """An OpenAI-compatible server on loopback. While `status` is set it answers every call
    with that HTTP status and `body(key)` (the key is what the client sent, "Bearer "
    stripped); else with the smallest instance of the requested schema. Counts requests."""

    def __init__(self, status: int | None, body=lambda key: json.dumps({"error": "denied"})):
        self.status, self.body, self.requests = status, body, 0
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests += 1
                if server.status is not None:
                    key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                    self._reply(server.status, server.body(key).encode())
                    return
                schema = request["response_format"]["json_schema"]["schema"]
                self._reply(200, json.dumps({
                    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {
                        "role": "assistant",
                        "content": json.dumps(minimal_instance(schema))}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                              "total_tokens": 2}}).encode())

            def _reply(self, status, data):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        self.spec = f"openai={self.url}#m"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def entities(path: Path, names=ENTITIES) -> Path:
    path.write_text("\n".join(names) + "\n", encoding="utf-8")
    return path


def serc_run(dataset: Path, out: Path, lm: str, *extra) -> int:
    return main(["run", "--method", "serc", "--dataset", "bio", "--dataset-path", str(dataset),
                 "--corpus", CORPUS, "--lm", lm, "--out", str(out), "--quiet",
                 *map(str, extra)])


# -- 2. a key cut inside an error body ---------------------------------------------------------
def test_a_key_cut_inside_an_error_body_never_reaches_results_or_traces(monkeypatch, capsys,
                                                                       tmp_path):
    """The client keeps 300 characters of an error body: with the key starting at 285, the
    cut leaves 15 of its characters, which no longer match the whole key."""
    monkeypatch.setenv("SERC_LM_API_KEY", SECRET)

    def body(key):
        head = '{"error": {"message": "upstream refused the request; '
        text = head + "x" * (285 - len(head) - len("key: ")) + "key: " + key
        assert text.index(SECRET) == 285
        return text + ' was not accepted upstream"}}'

    out, trace = tmp_path / "run.jsonl", tmp_path / "t.json"
    draft = tmp_path / "d.txt"
    draft.write_text(DRAFT)
    with KeyServer(500, body) as server:
        run_code = serc_run(entities(tmp_path / "e.txt", ENTITIES[:2]), out, server.spec)
        correct_code = main(["correct", "--question", QUESTION, "--draft", str(draft),
                             "--corpus", CORPUS, "--lm", server.spec, "--quiet",
                             "--trace", str(trace)])
    captured = capsys.readouterr()
    assert run_code == 1 and correct_code == 1  # nothing was verified: a failure
    records = read_results(out)
    assert len(records) == 2 and all("HTTP 500" in r["error"] for r in records)
    assert all("upstream refused" in r["error"] for r in records)  # reported...
    events = json.loads(trace.read_text())["events"]
    assert json.loads(trace.read_text())["status"] == "failed"
    assert any("HTTP 500" in e["message"] and e["kind"] == "error" for e in events)
    blob = outputs(captured, out, tmp_path / "run.meta.json", trace)
    assert not leaked(blob)  # ...without the key or what the cut left of it
    # the redactor itself: a prefix that ends the text, or precedes a non-key character
    assert redact(f"key: {SECRET[:12]}") == "key: [redacted]"
    assert redact(f'"{SECRET[:9]}..."') == '"[redacted]..."'
    assert redact(f"{SECRET[:10]}XYZ") == f"{SECRET[:10]}XYZ"  # another token


# -- 3. a key in an exception ------------------------------------------------------------------
class _RejectingEngine:
    """A provider engine (not ours) whose auth error carries the key, as some SDKs' do."""

    supports_response_schema = True
    supported_params = frozenset({"response_format", "temperature", "max_tokens"})

    def complete(self, request):
        from dspy import lm15

        raise lm15.AuthError(f"Incorrect API key provided: {SECRET}", status=401)


@pytest.mark.parametrize("backend", ["server", "provider"])
def test_a_rejected_key_on_the_ask_path_raises_a_redacted_configuration_error(
        backend, monkeypatch):
    monkeypatch.setenv("SERC_LM_API_KEY", SECRET)
    with KeyServer(401, lambda key: json.dumps(
            {"error": {"message": f"Incorrect API key provided: {key}"}})) as server:
        if backend == "server":
            lm = openai_compatible_lm(server.url, "m")
        else:
            from serc_dspy.backends.chat import ThreadedAsyncEngine

            engine = _RejectingEngine()
            lm = dspy.LM("local/provider", engine=engine,
                         async_engine=ThreadedAsyncEngine(engine), cache=False, num_retries=0)
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()), \
                pytest.raises(UserError) as info:
            SERC(retriever=CountingRetriever())(question=QUESTION)  # no draft: the ask path
    error = info.value
    assert "401" in str(error) and "key" in str(error)
    assert not leaked(str(error) + repr(error) + describe(error) + repr(error.args))
    assert server.requests == (1 if backend == "server" else 0)


# -- 4. a rejected key is a configuration error, not an outage ----------------------------------
def test_a_rejected_key_stops_serc_run_at_the_first_request_with_exit_2(monkeypatch, capsys,
                                                                        tmp_path):
    monkeypatch.setenv("SERC_LM_API_KEY", SECRET)
    dataset, out = entities(tmp_path / "e.txt"), tmp_path / "run.jsonl"
    with KeyServer(401, lambda key: json.dumps(
            {"error": {"message": f"invalid key {key}"}})) as server:
        code = serc_run(dataset, out, server.spec, "--workers", 4)
        captured = capsys.readouterr()
        assert code == 2 and server.requests == 1
        last = captured.err.strip().splitlines()[-1]
        assert last.startswith("serc: error:") and "rejected the API key" in last
        assert "HTTP 401" in last and "Traceback" not in captured.err
        assert not out.is_file() or read_results(out) == []  # no item recorded as done
        assert not leaked(outputs(captured, out, tmp_path / "run.meta.json"))

        server.status = None  # the key is fixed: a resume runs every item
        code = serc_run(dataset, out, server.spec, "--workers", 4)
    captured = capsys.readouterr()
    assert code in (0, 1) and server.requests > 1
    assert sorted(r["id"] for r in read_results(out)) == sorted(ENTITIES)


# -- 15. resume with other inputs ----------------------------------------------------------------
@pytest.mark.parametrize("change, named", [
    ("another dataset file", "dataset_path"),
    ("the dataset file edited", "dataset_sha256"),
    ("another --max-tokens", "max_tokens"),
    ("another temperature (library)", "temperature"),
])
def test_resume_refuses_changed_inputs_naming_them(change, named, monkeypatch, capsys,
                                                   tmp_path):
    from serc_dspy.evaluation.datasets import load_bio
    from serc_dspy.evaluation.runner import run_experiment

    def factory(spec, max_tokens=None, temperature=0.0, **options):
        lm, _ = scripted_lm(handlers())
        lm.kwargs.update(max_tokens=max_tokens or 512, temperature=temperature)
        return lm

    monkeypatch.setattr("serc_dspy.backends.lm_from_spec", factory)
    first, out = entities(tmp_path / "a.txt", ENTITIES[:4]), tmp_path / "run.jsonl"
    assert serc_run(first, out, "sglang=http://127.0.0.1:9/v1#m", "--max-tokens", 300) == 0
    before = out.read_text()
    capsys.readouterr()
    again = ["sglang=http://127.0.0.1:9/v1#m", "--max-tokens", 300]
    if change == "another dataset file":
        code = serc_run(entities(tmp_path / "b.txt", ENTITIES[4:]), out, *again)
    elif change == "the dataset file edited":
        code = serc_run(entities(first, ENTITIES[2:6]), out, *again)
    elif change == "another --max-tokens":
        code = serc_run(first, out, again[0], "--max-tokens", 100)
    else:
        lm = factory(None, max_tokens=300, temperature=0.7)
        with pytest.raises(UserError, match=named) as info:
            run_experiment("serc", load_bio(first), out, retriever=LocalCorpus(CORPUS),
                           lm=lm, progress=False, dataset="bio")
        code, err = 2, f"serc: error: {info.value}\n"
    if change != "another temperature (library)":
        err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("serc: error:")
    assert f"made with {named} " in err
    assert out.read_text() == before  # no record of the other input was added
    meta = json.loads((tmp_path / "run.meta.json").read_text())
    assert meta["dataset_sha256"] and meta["decoding"] == {"temperature": 0.0,
                                                           "max_tokens": 300}


# -- 16. CLI leftovers ---------------------------------------------------------------------------
def _binary(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe" * 20)
    return ["report", str(path), "--out", str(tmp_path / "report")]


def _run_to(out):
    return lambda tmp_path: ["run", "--method", "serc", "--dataset", "bio", "--dataset-path",
                             str(entities(tmp_path / "e.txt")), "--corpus", CORPUS,
                             "--out", str(out(tmp_path)), "--quiet"]


def _meta_folder(tmp_path):
    (tmp_path / "RUN.meta.json").mkdir()
    return tmp_path / "RUN.jsonl"


def _under_a_file(tmp_path):
    (tmp_path / "file.txt").write_text("not a folder")
    return tmp_path / "file.txt" / "RUN.jsonl"


@pytest.mark.parametrize("argv, message", [
    (_run_to(lambda tmp_path: tmp_path), "is a folder"),
    (_run_to(_meta_folder), "RUN.meta.json is a folder"),
    (_run_to(_under_a_file), "cannot create the folder"),
    (_binary, "not UTF-8"),
    (lambda tmp_path: ["ask", QUESTION, "--corpus", CORPUS, "--lm-rate", "1e-300"],
     "--lm-rate must be a finite number"),
    (lambda tmp_path: ["ask", QUESTION, "--corpus", CORPUS, "--search-rate", "inf"],
     "--search-rate must be a finite number"),
], ids=["out-is-a-folder", "meta-is-a-folder", "out-unwritable", "report-binary",
        "absurd-lm-rate", "infinite-search-rate"])
def test_cli_leftovers_are_one_line_usage_errors(argv, message, monkeypatch, capsys,
                                                 tmp_path):
    lm, engine = scripted_lm(handlers())
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    code = main(argv(tmp_path))
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("serc: error:")
    assert message in err and "Traceback" not in err
    assert engine.calls == []  # refused before any work


# -- smaller mismatches --------------------------------------------------------------------------
@pytest.mark.parametrize("page", [
    "Error 503: Service Unavailable. The server is temporarily unable to handle the request.",
    "503 Service Unavailable",
    "Internal Server Error",
    "HTTP/1.1 502 Bad Gateway",
    "<html><head><title>504 Gateway Time-out</title></head><body>nginx</body></html>",
    "429 Too Many Requests: retry later",
    "HTTP Error 500: Internal Server Error",
])
def test_an_http_error_text_returned_as_a_passage_is_a_failed_retrieval(page):
    with pytest.raises(RetrievalError, match="error message as a passage"):
        as_retriever(lambda q, k: [page])("q", 3)
    for text in ("503 BC was a year of the pre-Julian Roman calendar.",
                 "The Forbidden City is a palace complex in Beijing.",
                 "Internal medicine is a medical specialty."):
        assert as_retriever(lambda q, k, t=text: [t])("q", 3)[0].text == text  # evidence
    lm, _ = scripted_lm(handlers())
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = SERC(retriever=lambda q, k: [page])(question=QUESTION, draft=DRAFT)
    trace = prediction.trace
    assert all(f.status == "unverified" for f in trace.facts)  # kept, not pruned
    assert trace.status == "failed" and DRAFT.split(".")[0] in prediction.answer
    assert any("error message as a passage" in e.message for e in trace.errors)


def test_report_html_skips_a_malformed_trace_with_a_warning(monkeypatch, capsys, tmp_path):
    from serc_dspy.evaluation.datasets import Item
    from serc_dspy.evaluation.runner import run_experiment

    lm, _ = scripted_lm(handlers())
    out = tmp_path / "run.jsonl"
    run_experiment("serc", [Item(id="good", question=QUESTION, draft=DRAFT),
                            Item(id="broken", question=QUESTION, draft=DRAFT)], out,
                   retriever=CountingRetriever(), lm=lm, progress=False, dataset="bio")
    records = {r["id"]: r for r in read_results(out)}
    records["broken"]["trace"]["sentences"] = "not a list"
    records["broken"]["trace"]["status"] = 42
    out.write_text("".join(json.dumps(records[i]) + "\n" for i in ("good", "broken")))
    html = tmp_path / "report.html"
    code = main(["report", str(out), "--out", str(tmp_path / "md"), "--html", str(html)])
    captured = capsys.readouterr()
    assert code == 0
    warnings = [line for line in captured.err.splitlines() if "malformed trace" in line]
    assert len(warnings) == 1 and str(out) in warnings[0] and "'broken'" in warnings[0]
    page = html.read_text()
    assert "malformed trace" in page and page.count(">view</a>") == 1  # the rest is rendered
    assert (tmp_path / "report_views" / "run" / "1.html").is_file()
    assert "| serc |" in captured.out  # the tables too, costed from the valid trace


def test_an_lm_that_returns_empty_output_is_a_failure_not_no_information(monkeypatch,
                                                                         capsys, tmp_path):
    empty = handlers(AnswerQuestion=lambda i: {"answer": ""},
                     GroundedAnswer=lambda i: {"answer": ""})
    lm, _ = scripted_lm(empty)
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    trace_file = tmp_path / "t.json"
    code = main(["ask", QUESTION, "--corpus", CORPUS, "--quiet", "--trace", str(trace_file)])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert captured.err.strip().splitlines()[-1].startswith(
        "serc: failed: nothing was corrected: the LM returned empty output")
    trace = json.loads(trace_file.read_text())
    assert trace["status"] == "failed" and trace["answer"] == ""
    assert any(e["phase"] == "generate" and e["kind"] == "error"
               and "the LM returned empty output" in e["message"] for e in trace["events"])

    # A refusal is an answer: no information (exit 0), not a failure.
    refusal, _ = scripted_lm(handlers(AnswerQuestion=lambda i: {"answer": "I cannot answer."},
                                      GroundedAnswer=lambda i: {"answer": ""}))
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: refusal)
    code = main(["ask", QUESTION, "--corpus", CORPUS, "--quiet", "--trace", str(trace_file)])
    assert code == 0 and json.loads(trace_file.read_text())["status"] == "no_info"
