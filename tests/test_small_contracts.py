"""Small contracts a user meets first: an empty `--lm`, an unbounded timeout, thread counts in
other scripts, the `--method` help, and a run's usage read as attributes."""

import sys
from pathlib import Path

import pytest

from serc_dspy.cli import build_parser, main
from serc_dspy.config import RunOptions
from serc_dspy.core.errors import UserError
from serc_dspy.core.trace import StepUsage, Usage
from serc_dspy.programs.registry import method_names

sys.path.insert(0, str(Path(__file__).parent / "programs"))


def test_an_empty_lm_is_refused_instead_of_starting_the_default_model(capsys):
    with pytest.raises(UserError, match="--lm is empty"):
        RunOptions(lm="  ")
    assert RunOptions().lm == "qwen1.5b"  # unset is the default; empty is a mistake
    assert main(["correct", "--question", "q", "--draft", "-", "--lm", ""]) == 2
    assert "--lm is empty" in capsys.readouterr().err


def test_a_timeout_past_a_day_is_refused_up_front():
    with pytest.raises(UserError, match="at most 86400 seconds"):
        RunOptions(lm_timeout=99999999999)
    assert RunOptions(lm_timeout=600).lm_timeout == 600


@pytest.mark.parametrize("value", ["²", "١٢", "１２", "2147483648", "-1", "1.5"])
def test_thread_and_poll_settings_take_ascii_digits_in_range_only(monkeypatch, value):
    from serc_dspy.runtime.cpu import default_threads

    monkeypatch.setenv("SERC_THREADS", value)
    with pytest.raises(UserError, match="SERC_THREADS must be a whole number"):
        default_threads()


def test_the_method_help_lists_every_registered_method():
    text = build_parser().format_help() + "".join(
        action.help or "" for sub in build_parser()._subparsers._group_actions
        for parser in sub.choices.values() for action in parser._actions)
    for name in method_names():
        assert name in text, name


def test_a_runs_usage_reads_as_its_repr_says():
    usage = Usage()
    usage.record("verdicts", "m", StepUsage(calls=3, prompt_tokens=10, completion_tokens=2))
    assert usage.calls == 3 and usage.prompt_tokens == 10 and usage.total_tokens == 12
    assert "calls=3" in repr(usage)


def test_a_short_key_is_redacted_whatever_its_length(monkeypatch):
    from serc_dspy.core.errors import redact

    monkeypatch.setenv("OPENAI_API_KEY", "sk-a1b2")
    assert redact("401: invalid key sk-a1b2 given") == "401: invalid key [redacted] given"
    assert redact("the task-a1b2c3 id") == "the task-a1b2c3 id"  # inside another token: not it


def test_a_password_in_a_url_is_never_shown():
    from serc_dspy.core.errors import redact

    text = "calling http://user:s3cr3t@127.0.0.1:8000/v1 failed"
    assert redact(text) == "calling http://user:[redacted]@127.0.0.1:8000/v1 failed"
    assert redact("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"  # a port stays


@pytest.mark.parametrize("url", ["http://user:s3cr3tPASS@127.0.0.1:8000/v1",
                                 "http://s3cr3tPASS@127.0.0.1:8000/v1"])
def test_credentials_in_the_lm_url_are_refused_without_showing_them(capsys, tmp_path, url):
    # N9: the userinfo form is refused up front (the key belongs in $SERC_LM_API_KEY), and
    # the password reaches no output: stderr, the trace, or a meta file
    draft = tmp_path / "draft.txt"
    draft.write_text("Warsaw.")
    code = main(["correct", "--lm", f"openai={url}#m", "--question", "Where?", "--draft",
                 str(draft), "--no-retrieval", "--trace", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert code == 2 and "credentials in the --lm URL" in err and "SERC_LM_API_KEY" in err
    assert "s3cr3tPASS" not in err and not (tmp_path / "t.json").exists()


def test_set_lm_alone_runs_a_serc_and_a_predictors_own_lm_wins():
    import dspy
    from scripted import scripted_lm
    from test_serc import handlers

    from serc_dspy import SERC, LocalCorpus, StrictJSONAdapter

    own, own_engine = scripted_lm(handlers(), name="own")
    other, other_engine = scripted_lm(handlers(), name="other")
    corpus = LocalCorpus.from_texts({"c.txt": "Marie Curie was born in Warsaw in 1867."})
    serc = SERC(retriever=corpus, firewall=False)
    serc.set_lm(own)
    with dspy.context(adapter=StrictJSONAdapter()):
        serc(question="Tell me a bio of Marie Curie.", draft="Marie Curie was born in 1867.")
    assert own_engine.calls
    with dspy.context(lm=other, adapter=StrictJSONAdapter()):
        serc(question="Tell me a bio of Marie Curie.", draft="Marie Curie was born in 1867.")
    assert not other_engine.calls  # the predictors' own LM wins over the configured one


def test_the_rule_flag_works_as_the_help_writes_it(capsys):
    from serc_dspy.cli import rule_flags_joined

    assert rule_flags_joined(["ask", "q", "--rule", "-quote.overrule", "--rule", "+fix.retry"]) \
        == ["ask", "q", "--rule=-quote.overrule", "--rule=+fix.retry"]
    assert main(["correct", "--question", "q", "--draft", "-", "--rule", "-nope.rule"]) == 2
    assert "unknown rule 'nope.rule'" in capsys.readouterr().err  # read as a rule, not a flag


@pytest.mark.parametrize("options, words", [
    ({"evidence_window": 2, "evidence": "summary"}, "evidence_window cuts retrieved"),
    ({"evidence_window": 2, "evidence": "passages", "use_retrieval": False},
     "evidence_window cuts retrieved"),
    ({"fact_evidence": True, "use_retrieval": False}, "fact_evidence searches"),
])
def test_an_option_that_cannot_take_effect_is_refused(options, words):
    from serc_dspy import SERC
    from serc_dspy.core.errors import UserError

    with pytest.raises(UserError, match=words):
        SERC(**options)


def test_the_output_schema_is_sent_under_a_json_adapter_and_not_under_chat():
    """DSPy/CLI 7, as the README says: `StrictJSONAdapter` (the CLI's) sends the signature's
    output schema as `response_format`; DSPy's default `ChatAdapter` sends none."""
    import dspy
    from scripted import scripted_lm

    from serc_dspy import StrictJSONAdapter
    from serc_dspy.signatures import JudgeFact

    lm, engine = scripted_lm({"JudgeFact": lambda i: {"verdict": "SUPPORTED"}})
    judge = dspy.Predict(JudgeFact)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        assert judge(evidence="E.", claim="C.").verdict == "SUPPORTED"
    schema = engine.calls[-1]["schema"]
    assert schema and "verdict" in str(schema)
    before = len(engine.calls)
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
        judge(evidence="E.", claim="C.")
    assert not engine.calls[before]["schema"]  # (a reply it cannot parse retries as JSON)


@pytest.mark.parametrize("argv, words", [
    (["correct", "--method", "initial", "--verdicts", "fact"], "--verdicts applies to the SERC"),
    (["correct", "--method", "cove_rag", "--fact-evidence"], "--fact-evidence applies"),
    (["correct", "--method", "initial", "--rule", "-quote.overrule"], "--rule applies"),
    (["bench", "noise", "--method", "initial", "--ablate", "quote.overrule"], "--rule applies"),
])
def test_serc_only_options_for_a_run_with_no_serc_method_are_refused(tmp_path, capsys, argv,
                                                                     words):
    """N16: SERC's own options on a baseline, and `--ablate` with only baselines, are refused
    in one line, not dropped; a benchmark that also runs SERC passes them to it."""
    draft = tmp_path / "d.txt"
    draft.write_text("Marie Curie was born in Warsaw.")
    common = {"correct": ["--question", "Q", "--draft", str(draft), "--corpus", str(tmp_path)],
              "bench": ["--articles", "a.json", "--out", str(tmp_path / "o")]}[argv[0]]
    assert main([*argv, *common]) == 2
    err = capsys.readouterr().err
    assert words in err and err.startswith("serc: error:") and len(err.splitlines()) == 1
    from serc_dspy.config import RunOptions, refuse_serc_only

    refuse_serc_only(RunOptions(verdicts="fact"), ["initial", "serc"])  # SERC takes them
