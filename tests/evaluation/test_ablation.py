"""Rule ablation: which answers an ablated run carries over, and its variant labels."""

from __future__ import annotations

from serc_dspy.core.io import read_jsonl, write_jsonl
from serc_dspy.evaluation.ablation import carry_unfired, variants


def _record(id_, rulings=(), *, error=None, status="corrected", traced=True, events=()):
    trace = {"status": status, "rulings": [{"rule": r} for r in rulings],
             "events": [{"kind": k, "message": ""} for k in events]}
    if not traced:
        del trace["rulings"]
    return {"id": id_, "answer": id_, "error": error, "trace": trace}


def test_only_finished_answers_the_rule_never_fired_on_are_carried(tmp_path):
    base, target = tmp_path / "serc.jsonl", tmp_path / "serc~quote.echo.jsonl"
    write_jsonl(base, [
        _record("fired", ["quote.echo"]),
        _record("other rule", ["quote.overrule"]),
        _record("errored", error="LM unreachable"),
        _record("failed", status="failed"),
        _record("old trace", traced=False),
        _record("a step failed", events=["info", "error"]),
        _record("quiet", events=["info"]),
    ])
    assert carry_unfired(base, target, "quote.echo") == 2
    carried = read_jsonl(target)
    assert [r["id"] for r in carried] == ["other rule", "quiet"]
    assert {r["carried_from"] for r in carried} == {"serc.jsonl"}
    # an ablated run already under way is resumed, never seeded again
    assert carry_unfired(base, target, "quote.echo") == 0
    assert carry_unfired(tmp_path / "missing.jsonl", tmp_path / "x.jsonl", "quote.echo") == 0


def test_a_rule_that_acts_without_a_ruling_is_decoded_again_everywhere(tmp_path):
    """agree.contradiction's agreeing second verdict is a call and no ruling."""
    base = tmp_path / "serc.jsonl"
    write_jsonl(base, [_record("quiet")])
    assert carry_unfired(base, tmp_path / "serc~agree.contradiction.jsonl",
                         "agree.contradiction") == 0
    assert not (tmp_path / "serc~agree.contradiction.jsonl").exists()


def test_each_serc_method_gets_one_variant_per_ablated_rule():
    runs = variants(["initial", "serc"], ["quote.echo"], lambda m: m == "serc")
    assert runs == [("initial", "initial", {}), ("serc", "serc", {}),
                    ("serc~quote.echo", "serc", {"quote.echo": False})]
