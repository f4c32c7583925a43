"""A fact's verdict and status change in one place (`Fact.settle`), which records what made
each change: the view and the ablations read one history."""

import ast
from pathlib import Path

from test_choice import _decode

from serc_dspy.core.trace import Fact
from serc_dspy.view import render_trace

PACKAGE = Path(__file__).resolve().parents[2] / "serc_dspy"


def test_settle_records_each_change_and_what_made_it():
    fact = Fact(id="f0.0", text="Marie Curie was born in Kraków.", sentence=0)
    fact.settle("verifier", verdict="CONTRADICTED", model=True)
    fact.settle("verifier", verdict="CONTRADICTED")  # no change: nothing recorded
    fact.settle("choose.swap", status="corrected")
    assert [(h.by, h.verdict, h.status) for h in fact.history] == [
        ("verifier", "CONTRADICTED", "pending"), ("choose.swap", "CONTRADICTED", "corrected")]
    assert fact.lm_verdict == "CONTRADICTED"
    again = Fact.model_validate_json(fact.model_dump_json())
    assert again.history == fact.history


def test_no_module_writes_a_facts_verdict_or_status_but_settle():
    writers = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "trace.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
            for target in targets:
                for el in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(el, ast.Attribute) and el.attr in ("verdict", "lm_verdict",
                                                                     "status") \
                            and "trace" not in ast.unparse(el.value):
                        writers.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not writers, f"write a fact's state with Fact.settle: {writers}"


def test_a_decoding_leaves_each_facts_history_and_the_view_shows_it():
    result, _ = _decode()
    born = result.trace.fact("f0.0")
    assert [h.by for h in born.history][-2:] == ["choose.swap", "choose.swap"]
    assert born.history[-1].status == "corrected"
    assert "<b>history</b>: choose.swap &rarr; CONTRADICTED, pending; choose.swap &rarr; " \
           "CONTRADICTED, corrected" in render_trace(result.trace)
