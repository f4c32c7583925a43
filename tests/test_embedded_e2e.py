"""End to end with the real embedded model (SmolLM2-135M under JSON-schema grammars).

Inputs are kept to two sentences so the run takes about a minute on two CPU cores. The model
is weak, so these tests assert that the machinery holds (every step parsed, the graph is
complete and well-formed), not that the answer is right.
"""

import json
import typing

import dspy
import pytest
from conftest import EXAMPLES

from serc_dspy import SERC, LocalCorpus, Trace
from serc_dspy.backends import embedded_lm, find_smollm2_gguf
from serc_dspy.cli import main
from serc_dspy.core.trace import Verdict
from serc_dspy.programs import build_method, method_names

pytestmark = pytest.mark.embedded

QUESTION = "Tell me a bio of Marie Curie."
DRAFT = ("In 1898 she and Pierre discovered two new elements, polonium and radium. "
         "She won the Nobel Prize in Chemistry in 1903 together with Pierre Curie.")
ALLOWED = set(typing.get_args(Verdict))


@pytest.fixture(scope="module")
def lm():
    find_smollm2_gguf()  # fails loudly if the [local] extra is missing
    return embedded_lm("smollm2")


def degraded_only_by_truncation(trace: Trace) -> None:
    """SmolLM2 loops until max_tokens on some calls; those are refused loudly (an error event,
    facts kept unverified). Any other error is a defect."""
    other = [e.message for e in trace.errors if "max_tokens" not in e.message
             and "bound" not in e.message and "decoding failed" not in e.message]
    assert other == []


def assert_graph_complete(trace: Trace) -> None:
    degraded_only_by_truncation(trace)
    assert trace.sentences and trace.facts and trace.checks
    assert any(f.verdict for f in trace.facts)
    for fact in trace.facts:
        assert fact.verdict in ALLOWED or fact.status == "unverified"
        assert fact.status in {"kept", "corrected", "pruned", "uncorrected", "unverified",
                               "disputed"}
    for check in trace.checks:
        if check.error is None:
            assert check.query.strip() and check.evidence.strip()
        if check.error is None and check.evidence_source == "retrieval":
            assert check.passages and all(p.source for p in check.passages)
    assert trace.usage.total.calls > 0
    assert trace.usage.total.prompt_tokens > 0 and trace.usage.total.completion_tokens > 0


def test_serc_decodes_a_draft_with_the_embedded_model(lm):
    program = SERC(retriever=LocalCorpus(EXAMPLES / "corpus"), max_workers=2)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = program(question=QUESTION, draft=DRAFT)
    trace = prediction.trace
    assert_graph_complete(trace)
    assert prediction.initial_answer == DRAFT
    assert prediction.answer.strip()
    assert trace.firewall.query_entity or trace.firewall.answer_entity
    assert Trace.from_json(trace.to_json()) == trace


def test_choice_check_nodes_run_under_the_engines_grammar(lm):
    """`verdicts="choose"` with the real model: every choice the engine decodes is one of the
    offered letters (the `Literal` output, grammar-constrained), both orders are asked, and
    the only edits are slot swaps of the draft's own sentences."""
    program = SERC(retriever=LocalCorpus(EXAMPLES / "corpus"), max_workers=2,
                   verdicts="choose", evidence="passages", queries="facts", top_k=2,
                   context_chars=1600, firewall=False)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = program(question=QUESTION, draft=DRAFT)
    trace = prediction.trace
    degraded_only_by_truncation(trace)
    asked = [s for f in trace.facts for s in f.slots if s.choices and s.kind != "sentence"]
    assert trace.usage.steps["choice"].calls >= 2 and asked
    for slot in asked:
        values = {c.value for c in slot.candidates}
        assert len(slot.choices) in (2, 4) and all(c is None or c in values for c in slot.choices)
    swaps = {(r.before, r.after) for r in trace.rulings if r.rule == "choose.swap"}
    expected = DRAFT
    for s in trace.sentences:
        if not s.kept_verbatim:
            assert trace.ruled("rewrite.in_place", f"s{s.index}")
    for old, new in swaps:
        expected = expected.replace(old, new, 1)
    assert prediction.answer == expected  # nothing but the swaps changed


def test_cli_correct_prints_the_json_document(lm, tmp_path, capsys, monkeypatch):
    draft = tmp_path / "draft.txt"
    draft.write_text(DRAFT, encoding="utf-8")
    trace_file = tmp_path / "trace.json"
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    # `--verdicts check`: a verdict without a quote field, which SmolLM2 cannot run away in;
    # whether its cited quotes stay under their bound varies with llama.cpp's batching, and a
    # run in which every check failed rightly exits 1 and prints nothing.
    code = main(["correct", "--question", QUESTION, "--draft", str(draft),
                 "--corpus", str(EXAMPLES / "corpus"), "--json", "--quiet",
                 "--verdicts", "check", "--trace", str(trace_file)])
    out = capsys.readouterr().out
    assert code == 0
    payload = json.loads(out)
    assert set(payload) == {"answer", "initial_answer", "trace", "usage"}
    trace = Trace.model_validate(payload["trace"])
    assert_graph_complete(trace)
    assert payload["usage"]["total"]["calls"] == trace.usage.total.calls
    assert Trace.from_json(trace_file.read_text()) == trace


@pytest.mark.parametrize("name", [m for m in method_names() if m != "serc"])
def test_every_method_runs_with_the_embedded_model(lm, name):
    program = build_method(name, retriever=LocalCorpus(EXAMPLES / "corpus"), max_workers=2)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = program(question=QUESTION, draft=DRAFT)
    trace = prediction.trace
    degraded_only_by_truncation(trace)
    assert prediction.answer.strip() and prediction.initial_answer == DRAFT
    if name != "initial":
        assert trace.usage.total.calls > 0
    if name.startswith("serc"):
        assert all(f.verdict in ALLOWED or f.status == "unverified" for f in trace.facts)
