"""The experiment runner: records, failures, resume after a kill, and the meta file."""

import json
import subprocess
import sys
import time
from pathlib import Path

import dspy
import pytest
from scripted import scripted_lm

from serc_dspy.core.errors import UserError
from serc_dspy.core.trace import Trace
from serc_dspy.evaluation.datasets import Item
from serc_dspy.evaluation.runner import read_results, run_experiment

HELPER = Path(__file__).with_name("slow_run.py")
RECORD_KEYS = {"id", "method", "dataset", "question", "topic", "answer", "initial_answer",
               "trace", "error", "seconds"}


def items(n):
    return [Item(id=f"item-{i}", question=f"Question number {i}?", topic=f"T{i}")
            for i in range(n)]


def lines(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_records_hold_answer_trace_and_timing(tmp_path):
    lm, _ = scripted_lm({"AnswerQuestion": lambda i: {"answer": "A: " + i["question"]}})
    out = tmp_path / "run.jsonl"
    summary = run_experiment("initial", items(3), out, lm=lm, workers=3, progress=False,
                             dataset="synthetic")
    assert (summary.total, summary.completed, summary.failed, summary.skipped) == (3, 3, 0, 0)
    records = lines(out)
    assert sorted(r["id"] for r in records) == ["item-0", "item-1", "item-2"]
    for record in records:
        assert set(record) == RECORD_KEYS
        assert record["answer"] == "A: " + record["question"] == record["initial_answer"]
        assert record["method"] == "initial" and record["dataset"] == "synthetic"
        trace = Trace.model_validate(record["trace"])
        assert trace.usage.total.calls == 1 and trace.usage.total.prompt_tokens > 0
        assert record["error"] is None and record["seconds"] >= 0


def test_limit_and_meta_file_without_secrets(tmp_path):
    lm, _ = scripted_lm({"AnswerQuestion": lambda i: {"answer": "x"}})
    lm.kwargs["api_key"] = "sk-very-secret"
    out = tmp_path / "run.jsonl"
    run_experiment("initial", items(5), out, lm=lm, limit=2, progress=False, dataset="syn",
                   top_k=3)
    assert len(lines(out)) == 2
    meta_text = (tmp_path / "run.meta.json").read_text()
    meta = json.loads(meta_text)
    assert meta["method"] == "initial" and meta["dataset"] == "syn"
    assert meta["lm"] == "local/scripted" and meta["options"] == {"top_k": 3}
    assert meta["items"] == 2 and meta["completed"] == 2 and "finished" in meta
    assert "sk-very-secret" not in meta_text


def test_a_failing_item_is_recorded_and_retried_on_resume(tmp_path):
    broken = {"on": True}

    def answer(inputs):
        if broken["on"] and inputs["question"] == "Question number 2?":
            raise RuntimeError("backend exploded")
        return {"answer": "fine"}

    lm, engine = scripted_lm({"AnswerQuestion": answer})
    out = tmp_path / "run.jsonl"
    first = run_experiment("initial", items(5), out, lm=lm, workers=2, progress=False)
    assert (first.completed, first.failed) == (5, 1)
    by_id = {r["id"]: r for r in lines(out)}
    assert len(by_id) == 5
    assert by_id["item-2"]["answer"] is None and "backend exploded" in by_id["item-2"]["error"]
    assert all(by_id[f"item-{i}"]["answer"] == "fine" for i in (0, 1, 3, 4))

    broken["on"] = False
    engine.calls.clear()
    second = run_experiment("initial", items(5), out, lm=lm, progress=False)
    assert (second.skipped, second.completed, second.failed) == (4, 1, 0)
    assert [c["inputs"]["question"] for c in engine.calls] == ["Question number 2?"]
    records = lines(out)
    assert sorted(r["id"] for r in records) == [f"item-{i}" for i in range(5)]
    assert all(r["error"] is None for r in records)


def test_failed_items_can_be_kept_on_resume(tmp_path):
    def boom(inputs):
        raise RuntimeError("Boom")

    failing, _ = scripted_lm({"AnswerQuestion": boom})
    lm, engine = scripted_lm({"AnswerQuestion": lambda i: {"answer": "ok"}})
    out = tmp_path / "run.jsonl"
    run_experiment("initial", items(1), out, lm=failing, progress=False)
    assert lines(out)[0]["error"]
    run_experiment("initial", items(2), out, lm=lm, progress=False, retry_failed=False)
    assert len(engine.calls) == 1
    assert [r["id"] for r in lines(out)] == ["item-0", "item-1"]


def test_a_torn_last_line_is_dropped_and_its_item_rerun(tmp_path):
    lm, engine = scripted_lm({"AnswerQuestion": lambda i: {"answer": "ok"}})
    out = tmp_path / "run.jsonl"
    run_experiment("initial", items(2), out, lm=lm, progress=False)
    with open(out, "a") as fh:
        fh.write('{"id": "item-2", "method": "initial", "answ')  # killed mid-write
    engine.calls.clear()
    run_experiment("initial", items(3), out, lm=lm, progress=False)
    assert len(engine.calls) == 1
    assert [r["id"] for r in lines(out)] == ["item-0", "item-1", "item-2"]


def test_a_torn_last_line_is_reported_and_any_other_bad_line_is_an_error(tmp_path, caplog):
    lm, _ = scripted_lm({"AnswerQuestion": lambda i: {"answer": "ok"}})
    out = tmp_path / "run.jsonl"
    run_experiment("initial", items(2), out, lm=lm, progress=False)
    with open(out, "a") as fh:
        fh.write('{"id": "item-2", "method": "initial", "answ')  # killed mid-write
    assert [r["id"] for r in read_results(out)] == ["item-0", "item-1"]
    assert f"{out}, line 3: a torn last line" in caplog.text
    summary = run_experiment("initial", items(3), out, lm=lm, progress=False)
    assert (summary.torn, summary.completed) == (1, 1)
    good = out.read_text().splitlines()
    out.write_text("\n".join([good[0], '{"id": "item-1", "answ', *good[1:]]) + "\n")
    with pytest.raises(UserError, match=r"run.jsonl, line 2: invalid JSON"):
        read_results(out)
    with pytest.raises(UserError, match=r"run.jsonl, line 2: invalid JSON"):
        run_experiment("initial", items(3), out, lm=lm, progress=False)


def test_empty_draft_is_an_abstention_without_lm_calls(tmp_path):
    lm, engine = scripted_lm({})
    out = tmp_path / "run.jsonl"
    run_experiment("serc", [Item(id="x", question="Tell me a bio of X.", draft="")], out,
                   lm=lm, retriever=lambda q, k: [], progress=False)
    (record,) = lines(out)
    assert record["answer"] == "" and record["error"] is None and engine.calls == []


def test_another_methods_file_is_refused(tmp_path):
    lm, _ = scripted_lm({"AnswerQuestion": lambda i: {"answer": "x"}})
    out = tmp_path / "run.jsonl"
    run_experiment("initial", items(1), out, lm=lm, progress=False)
    with pytest.raises(UserError, match="holds results of method 'initial'"):
        run_experiment("cove", items(1), out, lm=lm, progress=False)


def test_the_context_lm_is_used_when_none_is_given(tmp_path):
    lm, engine = scripted_lm({"AnswerQuestion": lambda i: {"answer": "ctx"}})
    out = tmp_path / "run.jsonl"
    with dspy.context(lm=lm):
        run_experiment("initial", items(2), out, workers=2, progress=False)
    assert len(engine.calls) == 2 and all(r["answer"] == "ctx" for r in lines(out))


def _start(out, calls, n, delay):
    return subprocess.Popen([sys.executable, str(HELPER), str(out), str(calls), str(n),
                             str(delay)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_killed_run_resumes_without_duplicates_or_recomputation(tmp_path):
    out, calls = tmp_path / "run.jsonl", tmp_path / "calls.log"
    n = 12
    proc = _start(out, calls, n, delay=0.4)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if out.exists() and len(read_results(out)) >= 4:
                break
            if proc.poll() is not None:
                pytest.fail(f"helper exited early: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.05)
        else:
            pytest.fail("the helper wrote nothing within 120 s")
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    before = {r["id"]: r for r in read_results(out)}
    assert 4 <= len(before) < n, "kill came too late to test a resume"
    calls.unlink()

    proc = _start(out, calls, n, delay=0.0)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-2000:]
    after = lines(out)
    ids = [r["id"] for r in after]
    assert sorted(ids) == sorted(f"item-{i}" for i in range(n))  # every item exactly once
    assert len(ids) == len(set(ids))
    recomputed = set(calls.read_text().splitlines())
    finished_questions = {r["question"] for r in before.values()}
    assert recomputed.isdisjoint(finished_questions)  # finished items were not recomputed
    assert len(recomputed) == n - len(before)
    for record in after:  # and their records are untouched
        if record["id"] in before:
            assert record == before[record["id"]]


def test_resuming_with_another_lm_or_options_is_refused(tmp_path):
    lm, _ = scripted_lm({"AnswerQuestion": lambda i: {"answer": "x"}})
    other, _ = scripted_lm({"AnswerQuestion": lambda i: {"answer": "y"}}, name="other")
    out = tmp_path / "run.jsonl"
    run_experiment("initial", items(1), out, lm=lm, progress=False, top_k=3, max_workers=1)
    with pytest.raises(UserError, match="resume with the same settings"):
        run_experiment("initial", items(2), out, lm=other, progress=False, top_k=3)
    with pytest.raises(UserError, match="resume with the same settings"):
        run_experiment("initial", items(2), out, lm=lm, progress=False, top_k=5)
    # Concurrency may change between resumes.
    summary = run_experiment("initial", items(2), out, lm=lm, progress=False, top_k=3,
                             max_workers=4)
    assert (summary.skipped, summary.completed) == (1, 1)
    # So may SERC's own options, which `initial` drops: its results resume beside a
    # `serc --fact-evidence` run.
    summary = run_experiment("initial", items(3), out, lm=lm, progress=False, top_k=3,
                             fact_evidence=True, reconstruct="minimal")
    assert (summary.skipped, summary.completed) == (2, 1)


@pytest.mark.parametrize("meta", [None, "[1, 2]", "{}"])
def test_results_whose_meta_is_gone_or_malformed_are_never_resumed(tmp_path, meta):
    # with another LM, a resume would mix two experiments in one file and name only the second
    lm, _ = scripted_lm({"AnswerQuestion": lambda i: {"answer": "x"}})
    other, _ = scripted_lm({"AnswerQuestion": lambda i: {"answer": "y"}}, name="other")
    out = tmp_path / "run.jsonl"
    run_experiment("initial", items(1), out, lm=lm, progress=False)
    meta_path = tmp_path / "run.meta.json"
    if meta is None:
        meta_path.unlink()
    else:
        meta_path.write_text(meta)
    with pytest.raises(UserError, match="cannot be resumed"):
        run_experiment("initial", items(2), out, lm=other, progress=False)
    assert [r["answer"] for r in lines(out)] == ["x"]


def test_an_edited_corpus_under_the_same_path_is_refused_on_resume(tmp_path):
    from serc_dspy import LocalCorpus

    lm, _ = scripted_lm({"AnswerQuestion": lambda i: {"answer": "x"}})
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Marie Curie was born in Warsaw in 1867.")
    out = tmp_path / "run.jsonl"
    run_experiment("initial", items(1), out, lm=lm, progress=False,
                   retriever=LocalCorpus(corpus))
    (corpus / "a.txt").write_text("Marie Curie was born in Kraków in 1867.")
    with pytest.raises(UserError, match="retriever_sha256"):
        run_experiment("initial", items(2), out, lm=lm, progress=False,
                       retriever=LocalCorpus(corpus))
