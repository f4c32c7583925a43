"""`SercOptions`: SERC's own options declared once, and everything derived from them: the
program's keywords, its stages' settings, the baselines' refusal, the CLI flags, the docs."""

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from serc_dspy import SERC, LocalCorpus, SercOptions
from serc_dspy.cli import build_parser
from serc_dspy.programs.base import InputError
from serc_dspy.programs.registry import SERC_ONLY_OPTIONS, build_method, get_method

CORPUS = LocalCorpus.from_texts({"a.txt": "Marie Curie was born in Warsaw in 1867."})


def test_an_options_object_and_keywords_combine_and_keywords_win():
    serc = SERC(CORPUS, options=SercOptions(verdicts="choose", evidence="passages"),
                evidence="summary", top_k=3)
    assert serc.options.verdicts == "choose" and serc.options.evidence == "summary"
    assert serc.verdicts == "choose" and serc.settings.evidence == "summary"
    assert serc.top_k == 3 and serc.settings.top_k == 3
    assert serc.fact_extractor is serc.checks.fact_extractor  # the predictor's old name
    assert SERC(CORPUS, density="atomic").settings.max_facts_per_check == 1


@pytest.mark.parametrize("options, message", [
    ({"density": "dense"}, "density: Input should be 'sentence' or 'atomic', got 'dense'"),
    ({"max_facts_per_check": 0}, "max_facts_per_check must be at least 1, got 0"),
    ({"evidence_window": 2}, "evidence_window cuts retrieved passages: it needs"),
    ({"fact_evidence": True, "use_retrieval": False}, "fact_evidence searches each fact's"),
    ({"verifier": "nli"}, "verifier must have averify(claims, evidence)"),
])
def test_a_bad_option_is_one_line_naming_it(options, message):
    with pytest.raises(InputError) as info:
        SERC(CORPUS, **options)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_the_options_are_read_only_and_an_unknown_keyword_is_refused():
    serc = SERC(CORPUS)
    with pytest.raises(ValidationError, match="frozen"):
        serc.options.verdicts = "fact"
    with pytest.raises(TypeError, match="bogus"):
        SERC(CORPUS, bogus=1)


def test_the_serc_only_list_is_the_fields_and_a_baseline_drops_them():
    assert SERC_ONLY_OPTIONS == set(SercOptions.model_fields)
    assert not get_method("cove_rag").accepts("evidence_window")
    assert get_method("serc_lean").accepts("evidence_window")
    build_method("cove_rag", CORPUS, verdicts="choose")  # dropped, not passed on


def test_every_flagged_option_is_a_flag_of_correct_with_its_help_and_choices():
    correct = build_parser()._subparsers._group_actions[0].choices["correct"]
    flags = {flag: action for action in correct._actions for flag in action.option_strings}
    for field in SercOptions.model_fields.values():
        extra = field.json_schema_extra or {}
        if extra.get("flag"):
            action = flags[extra["flag"]]
            assert action.help == extra["help"]
    assert flags["--verdicts"].choices == ["check", "fact", "choose"]
    assert flags["--no-firewall"].nargs == 0 and flags["--rule"].default == []
    assert "--frozen" in flags


def test_the_python_api_docs_list_every_option():
    page = (Path(__file__).resolve().parents[2] / "docs" / "python-api.md").read_text()
    documented = {name for cell in re.findall(r"^\| (`[^|]+)\|", page, re.M)
                  for name in re.findall(r"`(\w+)`", cell)}
    assert set(SercOptions.model_fields) <= documented
