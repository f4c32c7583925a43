"""The rulebook as a whole: every rule named and tested both ways, switches, languages, and
rulings that survive a round trip and reach the view."""

import pytest
import test_agree
import test_choose
import test_cover
import test_draft
import test_fixes
import test_guards
import test_hygiene
import test_names
import test_quotes
import test_roles
from rules_helpers import CountingRetriever, run
from scripted import entity

from serc_dspy import SERC, InputError, Trace
from serc_dspy.cli import main
from serc_dspy.rules import RULES, RuleSet, UnknownRule, language_of, parse_switches, rule_table
from serc_dspy.rules.guards import polish_problem
from serc_dspy.view import render_trace

MODULES = [test_hygiene, test_quotes, test_fixes, test_guards, test_names, test_draft,
           test_agree, test_choose, test_roles, test_cover]


def test_every_rule_has_an_id_a_statement_a_reason_and_tests_both_ways():
    for rule in RULES.values():
        assert rule.id.count(".") == 1 and rule.decides and rule.why, rule.id
    fires = set().union(*(m.FIRES for m in MODULES))
    quiet = set().union(*(m.QUIET for m in MODULES))
    assert fires == set(RULES) and quiet == set(RULES)
    assert all(f"`{rule}`" in rule_table() for rule in RULES)


def test_an_unknown_rule_id_is_a_clear_error_listing_the_valid_ones():
    for bad in ({"quote.overrul": False}, {"nope": True}):
        try:
            SERC(retriever=CountingRetriever(), rules=bad)
        except UnknownRule as exc:
            assert "quote.overrule" in str(exc) and isinstance(exc, InputError.__mro__[1])
        else:
            raise AssertionError("no error")
    assert parse_switches(["-quote.overrule", "+fix.retry"]) == {"quote.overrule": False,
                                                                 "fix.retry": True}


def test_the_cli_rule_flag_switches_a_rule_and_refuses_an_unknown_one(capsys):
    assert main(["correct", "--question", "q", "--draft", "-", "--rule=-nope.rule"]) == 2
    assert "unknown rule 'nope.rule'" in capsys.readouterr().err


def test_switching_a_rule_off_changes_exactly_that_rules_rulings():
    from rules_helpers import cited

    def cite(inputs):  # the Sorbonne fact cites a reordering the evidence does not contain
        if "Sorbonne" in inputs["claim"]:
            return {"quote": "She studied in Paris at the Sorbonne.", "verdict": "SUPPORTED"}
        return {"quote": "", "verdict": "SUPPORTED"}

    full = cited(QuoteAndJudge=cite)
    off = cited(QuoteAndJudge=cite, rules={"quote.absent": False})
    assert full.ruled("quote.absent") and not off.ruled("quote.absent")
    assert "quote.absent" in off.rules_off
    rest = [(r.rule, r.node, r.before, r.after) for r in full.rulings
            if r.rule != "quote.absent"]
    assert rest == [(r.rule, r.node, r.before, r.after) for r in off.rulings]
    assert off.answer == full.answer


GERMAN = ("Marie Curie wurde 1867 in Krakau geboren. Sie studierte an der Sorbonne in Paris. "
          "Sie erhielt 1903 den Nobelpreis für Chemie, und sie forschte weiter.")
CHINESE = "居里夫人1867年出生于克拉科夫。她在巴黎索邦大学学习。她于1903年获得诺贝尔化学奖。"


def test_language_is_read_from_the_draft():
    assert language_of("Marie Curie was born in Warsaw and she studied in Paris.") == "en"
    assert language_of(GERMAN) == "other" and language_of(CHINESE) == "other"
    assert RuleSet().for_language("other").off() == [
        r for r in RULES if RULES[r].english_only or not RULES[r].default]


WAGNER = ("Richard Wagner was born in Leipzig in 1813. He wrote Der Ring des Nibelungen und "
          "Die Walküre, and Tristan und Isolde was first performed in Munich in 1865.")


@pytest.mark.parametrize("text, language", [
    (WAGNER, "en"),  # German titles in English prose (N2): the English guards stay on
    ("She wrote \"Les Misérables et le Petit Prince\" in Paris.", "en"),
    ("Warsaw. Born 1868.", "en"),  # too little prose to tell: English, the safe side
    ("Maria Skłodowska-Curie urodziła się w Warszawie w 1867 roku.", "other"),
    ("Maria Curie nasceu em Varsóvia em 1867 e estudou em Paris.", "other"),
    ("Мария Кюри родилась в Варшаве в 1867 году.", "other"),
    (GERMAN, "other"), (CHINESE, "other"),
])
def test_the_language_is_read_from_the_prose_not_from_quoted_titles(text, language):
    assert language_of(text) == language


@pytest.mark.parametrize("draft, polished", [
    (WAGNER, WAGNER.replace("Munich", "Vienna").replace("1865", "1866")),
    (GERMAN, GERMAN.replace("1903", "1904")),
    (CHINESE, CHINESE.replace("1903", "1904")),
])
def test_the_number_and_name_guards_hold_in_every_language(draft, polished):
    rules = RuleSet().for_language(language_of(draft))
    problem = polish_problem(polished, draft, "Marie Curie", rules)
    assert problem and problem[0] == "polish.unfaithful", problem


def test_english_only_rules_never_fire_on_a_german_or_chinese_draft():
    english_only = {r for r in RULES if RULES[r].english_only}
    for draft in (GERMAN, CHINESE):
        def contradict(inputs):
            return {"quote": inputs["evidence"][:60], "verdict": "CONTRADICTED"}

        trace = run(draft=draft, AtomicFacts=lambda i: {"facts": [i["sentence"]]},
                    QueryEntity=lambda i: entity("Marie Curie"), QuoteAndJudge=contradict,
                    PolishAnswer=lambda i: {"answer": i["draft"] + " Nie."},
                    program=SERC(retriever=CountingRetriever(), verdicts="fact",
                                 evidence="passages", queries="facts"))
        assert trace.language == "other" and set(trace.rules_off) >= english_only
        fired = {r.rule for r in trace.rulings}
        assert not fired & english_only, fired & english_only


def test_rulings_round_trip_with_the_trace_and_reach_the_view():
    trace = run(RewriteSentence=lambda i: {"sentence": "Ok."})
    assert trace.rulings and trace.fact("f0.0").lm_verdict == "CONTRADICTED"
    again = Trace.from_json(trace.to_json())
    assert again == trace and again.rulings == trace.rulings
    page = render_trace(trace)
    assert 'data-rule="rewrite.in_place"' in page and 'data-rule="rewrite.too_short"' in page


def test_the_documented_rule_table_lists_every_rule_with_its_default_and_language():
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text()
    rows = {m[1]: (m[2], m[3]) for m in re.finditer(
        r"^\| `([\w.]+)` \| .*? \| (on|off) \| (yes|no) \|", page, re.M)}
    assert set(rows) == set(RULES)
    for rule_id, (default, english) in rows.items():
        rule = RULES[rule_id]
        assert (default == "on") == rule.default, rule_id
        assert (english == "yes") == rule.english_only, rule_id
