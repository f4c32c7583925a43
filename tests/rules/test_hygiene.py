"""`rules.hygiene`: which extracted items become facts; each drop or split is a ruling."""

import pytest
from rules_helpers import every_rule_on, run

from serc_dspy.rules import RuleSet
from serc_dspy.rules.hygiene import (
    PRONOUN_CLASSES,
    clean_facts,
    split_clauses,
    subject_pronouns,
)

SENTENCE = "Marie Curie discovered polonium in 1898 with Pierre Curie."
SUBJECT = "Marie Curie"
GOOD = "Marie Curie discovered polonium in 1898."

CASES = [  # (rule, items that fire it, items that do not)
    ("hygiene.pasted", ["Marie Curie discovered polonium. She found it in 1898."], [GOOD]),
    ("hygiene.duplicate", [GOOD, GOOD.lower()], [GOOD]),
    ("hygiene.placeholder", ["fact 1"], [GOOD]),
    ("hygiene.fragment", ["discovered polonium"], [GOOD]),
    ("hygiene.bare_name", ["Marie Curie Pierre"], [GOOD]),
    # the case that motivated it: a fact from the extractor's memory, not from the sentence
    ("hygiene.ungrounded", ["Marie Curie was born in Warsaw."], [GOOD]),
]
FIRES = {rule for rule, _, _ in CASES} | {"hygiene.sentence_fact", "hygiene.clause_split"}
QUIET = set(FIRES)


@pytest.mark.parametrize("rule, firing, quiet", CASES, ids=[c[0] for c in CASES])
def test_each_hygiene_rule_fires_on_its_case_and_not_on_a_clean_fact(rule, firing, quiet):
    _, dropped = clean_facts(firing, SENTENCE, SUBJECT, every_rule_on())
    assert rule in {d.rule for d in dropped}
    _, dropped = clean_facts(quiet, SENTENCE, SUBJECT, every_rule_on())
    assert rule not in {d.rule for d in dropped}


@pytest.mark.parametrize("rule, firing, _", CASES, ids=[c[0] for c in CASES])
def test_a_hygiene_rule_switched_off_does_not_fire(rule, firing, _):
    _, dropped = clean_facts(firing, SENTENCE, SUBJECT, RuleSet({rule: False}))
    assert rule not in {d.rule for d in dropped}


def test_a_sentence_without_a_usable_fact_is_checked_as_itself():
    trace = run(AtomicFacts=lambda i: {"facts": ["n/a"]})
    assert trace.ruled("hygiene.placeholder") and trace.ruled("hygiene.sentence_fact", "s0")
    assert trace.fact("f0.0").text == trace.sentences[0].text
    assert not run().ruled("hygiene.sentence_fact")


def test_a_clause_of_the_subject_is_split_and_pierres_stays_whole():
    she = subject_pronouns("Marie Curie was a physicist. She was born in Warsaw.")
    assert she == PRONOUN_CLASSES["she"]
    assert split_clauses("Marie Curie won the prize, and she gave the money away",
                         SUBJECT, she) == ["Marie Curie won the prize.",
                                           "Marie Curie gave the money away"]
    # the case that motivated the pronoun test: "he" is Pierre, not Marie Curie
    pierre = "Marie Curie met Pierre Curie in 1894, and he proposed to her"
    assert split_clauses(pierre, SUBJECT, she) == [pierre]
    draft = ("Marie Curie won the Nobel Prize, and she gave the money to her lab. "
             "She studied at the Sorbonne in Paris.")
    trace = run(draft=draft, AtomicFacts=lambda i: {"facts": [i["sentence"].rstrip(".")]})
    assert [r.rule for r in trace.ruled("hygiene.clause_split")] == ["hygiene.clause_split"]
    quiet = run(draft=f"{pierre}. She studied at the Sorbonne in Paris.",
                AtomicFacts=lambda i: {"facts": [i["sentence"].rstrip(".")]})
    assert not quiet.ruled("hygiene.clause_split")
