"""An ablation carries over the answers on which its rule never fired (`carry_unfired`). That
is sound only if every rule that changes a run leaves a ruling when it acts: here, on four
scripted scenarios, every default rule that left no ruling is switched off, and the run must
come out the same (answer, fact statuses and LM calls). A rule that acts without a ruling is
either given one, or marked `acts_without_ruling`, so its ablation decodes every answer again."""

from __future__ import annotations

import sys
from pathlib import Path

import dspy
import pytest

sys.path[:0] = [str(Path(__file__).parents[1] / "rules"), str(Path(__file__).parents[1]),
                str(Path(__file__).parents[1] / "programs")]

from scripted import CountingRetriever, scripted_lm  # noqa: E402
from test_choice import _decode  # noqa: E402
from test_serc import DRAFT, FACTS, S0, handlers  # noqa: E402

from serc_dspy import SERC, StrictJSONAdapter  # noqa: E402
from serc_dspy.rules import RULES  # noqa: E402


def checked(rules, **overrides):
    lm, engine = scripted_lm(handlers(**overrides))
    program = SERC(retriever=CountingRetriever(), rules=rules)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        return program(question="Tell me a bio of Marie Curie.", draft=DRAFT).trace, engine


def orphaned(rules):
    """The first sentence's "1867" in no fact, and a rewrite too short to stand: the orphan
    list decides the fallback (with no in-place edit: the draft's sentence kept, not the facts
    stated)."""
    facts = {**FACTS, S0: ["Marie Curie was born in Kraków."]}
    def extract(inputs):
        return {"facts": facts.get(inputs["sentence"], [inputs["sentence"]])}

    return checked({"rewrite.in_place": False, **(rules or {})}, AtomicFacts=extract,
                   RewriteSentence=lambda i: {"sentence": "Ok."})


def chosen(rules):
    result, engine = _decode(rules=rules)
    return result.trace, engine


SCENARIOS = {"check": checked, "orphan": orphaned, "choose": chosen}


def outcome(trace, engine):
    return (trace.answer, [(f.id, f.status, f.correction) for f in trace.facts],
            sorted(c["signature"] for c in engine.calls))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_rule_that_left_no_ruling_changed_nothing(scenario):
    run = SCENARIOS[scenario]
    full = outcome(*run(None))
    fired = {r.rule for r in run(None)[0].rulings}
    silent = [rule for rule, spec in RULES.items() if spec.default and rule not in fired
              and not spec.acts_without_ruling]
    assert silent
    changed = [rule for rule in silent if outcome(*run({rule: False})) != full]
    assert changed == [], f"{scenario}: these rules acted without a ruling: {changed}"


def test_the_orphan_rule_rules_where_it_decides_the_fallback():
    trace, _ = orphaned(None)
    assert trace.ruled("rewrite.orphan", "s0")
    off, _ = orphaned({"rewrite.orphan": False})
    assert off.answer != trace.answer  # so an ablation must decode this answer again
