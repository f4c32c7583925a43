"""The `serc` command: argument errors, output formats, methods, under a scripted LM."""

import json

import pytest
from conftest import EXAMPLES
from scripted import entity, reader, scripted_lm

from serc_dspy.cli import build_parser, main
from serc_dspy.commands.progress import StageProgress
from serc_dspy.core.errors import UserError
from serc_dspy.core.trace import Trace

DRAFT = "Marie Curie was born in Kraków in 1867. She studied at the Sorbonne in Paris."


def _handlers():
    return {
        "AnswerQuestion": lambda i: {"answer": DRAFT},
        "QueryEntity": lambda i: entity("Marie Curie"),
        "AnswerEntity": lambda i: entity("Marie Curie", "physicist"),
        "EvidenceEntity": lambda i: entity("Marie Curie", "physicist"),
        "SameEntity": lambda i: {"analysis": "Same.", "same": "YES"},
        "AtomicFacts": lambda i: {"facts": [i["sentence"]]},
        "VerificationQuery": lambda i: {"query": "Marie Curie " + i["facts"][0]},
        "EvidenceSummary": lambda i: {"evidence": "Born in Warsaw; studied at the Sorbonne."},
        "JudgeFact": lambda i: {"verdict": "CONTRADICTED" if "Kraków" in i["claim"]
                                else "SUPPORTED"},
        # A contradiction cites the corpus sentence that witnesses it (else it is re-judged).
        "QuoteAndJudge": lambda i: {"quote": "Marie Curie was born on 7 November 1867 in Warsaw.",
                                    "verdict": "CONTRADICTED"} if "Kraków" in i["claim"]
        else {"quote": "", "verdict": "SUPPORTED"},
        "CorrectFacts": lambda i: {"corrections": [
            {"original": f, "fixed": f.replace("Kraków", "Warsaw")}
            for f in i["erroneous_facts"]]},
        "RewriteSentence": lambda i: {"sentence": " ".join(i["facts"])},
        "PolishAnswer": lambda i: {"answer": i["draft"]},
        "ChooseValue": reader({"Warsaw", "1867", "Sorbonne", "Paris"}),
        "ChooseSentence": lambda i: {"sentence": 0, "stance": "not stated"},
        "ResearchQuestions": lambda i: {"queries": ["Marie Curie birthplace"]},
        "CheckAgreement": lambda i: {"reasoning": "ok", "agreement": "AGREE"},
    }


@pytest.fixture
def scripted(monkeypatch):
    lm, engine = scripted_lm(_handlers())
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    return engine


def test_ask_prints_answer_and_syndrome_summary(scripted, capsys):
    code = main(["ask", "Tell me a bio of Marie Curie.", "--corpus", str(EXAMPLES / "corpus")])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.strip().startswith("Marie Curie was born in Warsaw in 1867.")
    assert ("facts checked 2 / supported 1 / contradicted 1 / not found 0 / corrected 1 / "
            "pruned 0") in captured.err
    assert "detect: 2/2 checks" in captured.err  # progress


def test_a_fallback_run_warns_that_the_answer_is_unchanged(monkeypatch, capsys):
    lm, _ = scripted_lm({**_handlers(), "QuoteAndJudge": lambda i: {"quote": "",
                                                                   "verdict": "NOT_FOUND"},
                         "JudgeFact": lambda i: {"verdict": "NOT_FOUND"}})
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    code = main(["ask", "Tell me a bio of Marie Curie.", "--corpus", str(EXAMPLES / "corpus"),
                 "--rule=-agree.not_found", "--verdicts", "fact"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.strip() == DRAFT
    assert "returned unchanged (status fallback)" in captured.err


def test_quiet_hides_progress(scripted, capsys):
    main(["ask", "Tell me a bio of Marie Curie.", "--corpus", str(EXAMPLES / "corpus"),
          "--quiet"])
    assert "detect:" not in capsys.readouterr().err


def test_correct_json_and_trace_file(scripted, capsys, tmp_path):
    draft = tmp_path / "draft.txt"
    draft.write_text(DRAFT)
    out_file = tmp_path / "t.json"
    code = main(["correct", "--question", "Tell me a bio of Marie Curie.", "--draft", str(draft),
                 "--corpus", str(EXAMPLES / "corpus"), "--json", "--trace", str(out_file)])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0
    assert payload["initial_answer"] == DRAFT
    assert "Warsaw" in payload["answer"]
    assert payload["usage"]["total"]["calls"] == len(scripted.calls)
    assert Trace.from_json(out_file.read_text()).answer == payload["answer"]
    assert scripted.of("AnswerQuestion") == []


def test_method_option_runs_that_method(scripted, capsys):
    code = main(["ask", "q?", "--method", "rarr", "--corpus", str(EXAMPLES / "corpus"), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["trace"]["method"] == "rarr"
    assert scripted.of("CheckAgreement")


@pytest.mark.parametrize("argv, message", [
    (["ask", "Who?"], "no retriever configured: pass --corpus"),
    (["ask", "Who?", "--corpus", "/does/not/exist"], "corpus path does not exist"),
    (["ask", "  ", "--corpus", "EXAMPLES"], "the question is empty"),
    (["ask", "Who?", "--corpus", "EXAMPLES", "--method", "nope"], "valid methods: initial"),
    (["ask", "Who?", "--corpus", "EXAMPLES", "--lm", "gpt"], "accepted forms"),
    (["correct", "--question", "Who?", "--draft", "/nope.txt", "--corpus", "EXAMPLES"],
     "draft file not found"),
    (["ask", "Who?", "--corpus", "EMPTY"], "no .txt or .md files"),
    (["ask", "Who?", "--corpus", "EXAMPLES", "--max-facts-per-check", "0"],
     "max_facts_per_check"),
])
def test_bad_input_gives_one_line_error_and_status_2(argv, message, capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    argv = [str(EXAMPLES / "corpus") if a == "EXAMPLES" else
            str(tmp_path / "empty") if a == "EMPTY" else a for a in argv]
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert message in err and err.startswith("serc: error:") and len(err.splitlines()) == 1


def test_no_retrieval_needs_no_corpus(monkeypatch, capsys):
    handlers = _handlers()
    handlers["ParametricEvidence"] = lambda i: {"evidence": "Born in Warsaw."}
    lm, engine = scripted_lm(handlers)
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    assert main(["ask", "Tell me a bio of Marie Curie.", "--no-retrieval", "--quiet"]) == 0
    assert engine.of("ParametricEvidence") and not engine.of("EvidenceSummary")


def test_stage_lm_gives_the_verifier_its_own_lm_and_usage_is_split(monkeypatch, capsys):
    main_lm, main_engine = scripted_lm(_handlers(), name="generator")
    verify_lm, verify_engine = scripted_lm(_handlers(), name="verifier")
    specs = {"qwen1.5b": main_lm, "openai/verifier": verify_lm}
    monkeypatch.setattr("serc_dspy.config.build_lm",
                        lambda options, spec=None: specs[spec or options.lm])
    code = main(["ask", "Tell me a bio of Marie Curie.", "--corpus", str(EXAMPLES / "corpus"),
                 "--stage-lm", "verify=openai/verifier", "--json", "--quiet"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0
    models = payload["usage"]["models"]
    assert models["local/verifier"]["calls"] == len(verify_engine.calls) > 0
    assert models["local/generator"]["calls"] == len(main_engine.calls) > 0
    assert {c["signature"] for c in verify_engine.calls} <= {
        "VerificationQuery", "EvidenceSummary", "JudgeFacts", "JudgeFact", "QuoteAndJudge",
        "ChooseValue", "ChooseSentence"}


def test_unknown_stage_is_a_usage_error(monkeypatch, capsys):
    lm, _ = scripted_lm(_handlers())
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    code = main(["ask", "q", "--corpus", str(EXAMPLES / "corpus"), "--stage-lm", "verfy=local"])
    assert code == 2 and "unknown key(s) ['verfy']" in capsys.readouterr().err


def test_cache_option_makes_a_rerun_retrieval_free(scripted, capsys, tmp_path, monkeypatch):
    from serc_dspy.retrieval import local

    calls = []
    real = local.LocalCorpus.__call__

    def counting(self, query, k=8):
        calls.append(query)
        return real(self, query, k)

    monkeypatch.setattr(local.LocalCorpus, "__call__", counting)
    argv = ["ask", "Tell me a bio of Marie Curie.", "--corpus", str(EXAMPLES / "corpus"),
            "--cache", str(tmp_path / "cache"), "--quiet"]
    assert main(argv) == 0
    first = len(calls)
    assert first > 0
    assert main(argv) == 0
    assert len(calls) == first  # every retrieval of the second run came from the cache
    capsys.readouterr()


def test_tavily_without_a_key_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    assert main(["ask", "Who?", "--search", "tavily"]) == 2
    err = capsys.readouterr().err
    assert "TAVILY_API_KEY" in err and len(err.strip().splitlines()) == 1


def test_an_output_that_cannot_be_written_is_reported_after_the_answer(scripted, capsys,
                                                                       tmp_path):
    draft = tmp_path / "draft.txt"
    draft.write_text(DRAFT)
    argv = ["correct", "--question", "Tell me a bio of Marie Curie.", "--draft", str(draft),
            "--corpus", str(EXAMPLES / "corpus"), "--trace"]
    # a name too long is refused up front, in one line, before any work
    assert main([*argv, str(tmp_path / ("t" * 300 + ".json"))]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "File name too long" in captured.err
    # a path that passes the check and still cannot take the bytes (a full device)
    assert main([*argv, "/dev/full"]) == 2
    captured = capsys.readouterr()
    assert captured.out.strip().startswith("Marie Curie was born in Warsaw")  # printed first
    errors = [line for line in captured.err.splitlines() if line.startswith("serc: error:")]
    assert len(errors) == 1 and "could not write --trace /dev/full" in errors[0]


@pytest.mark.parametrize("argv", [
    ["correct", "--question"],                            # a missing value
    ["ask"],                                              # a missing positional
    ["ask", "Q", "--top-k", "x"],                         # a bad number
    ["nope"],                                             # an unknown command
    ["ask", "Q", "--verdicts", "maybe"],                  # a bad choice
    ["ask", "Q", "--corpus", "a", "--knowledge", "b"],    # conflicting choices
    ["bench", "noise", "--bios", "-1"],
])
def test_every_argument_error_is_one_line_and_one_hint_with_status_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2
    assert len(err) == 2 and err[0].startswith("serc: error: ") and "usage:" not in err[0]
    assert err[1].startswith("hint: `serc") and err[1].endswith("--help` lists the options")


RUN_COMMANDS = [["ask", "Q"], ["correct", "--question", "Q", "--draft", "d"],
                ["run", "--method", "serc", "--dataset", "bio", "--dataset-path", "e.txt",
                 "--out", "o.jsonl"],
                ["eval", "r.jsonl", "--metric", "factscore"],
                ["bench", "noise", "--articles", "a.json", "--method", "serc", "--out", "o"],
                ["bench", "factcheck", "--data", "d.jsonl", "--method", "serc", "--out", "o"],
                ["bench", "halueval", "--data", "d.jsonl", "--out", "o"],
                ["bench", "stages", "--data", "d"],
                ["compile", "--stage", "verify", "--data", "d", "--out", "o.json"]]


def _subparser(argv):
    parser = build_parser()
    for action in parser._subparsers._group_actions:
        parser = action.choices[argv[0]]
        break
    if argv[0] == "bench":
        parser = next(a for a in parser._actions if a.__class__.__name__ ==
                      "_SubParsersAction").choices[argv[1]]
    return parser


@pytest.mark.parametrize("argv", RUN_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_every_command_has_the_run_options_and_refuses_those_it_cannot_use(argv, capsys):
    """DSPy/CLI 8: one option set, from one declaration; an option a command cannot use is a
    one-line refusal, not a missing flag."""
    from serc_dspy.config import RunOptions

    flags = {f for a in _subparser(argv)._actions for f in a.option_strings}
    for flag in ("--lm-timeout", "--max-in-flight", "--lm-rate", "--deadline", "--corpus",
                 "--cache", "--verdicts", "--rule", "--reconstruct"):
        assert flag in flags, (argv[:2], flag)
    parsed = build_parser().parse_args([*argv, "--corpus", "c", "--verdicts", "fact"])
    if argv[0] in ("ask", "correct", "run"):
        assert RunOptions.from_args(parsed).corpus == "c"
    else:
        with pytest.raises(UserError, match="does not apply here"):
            RunOptions.from_args(parsed)


def test_the_status_line_shows_the_stage_and_a_running_clock_between_reports(monkeypatch,
                                                                             capsys):
    """DSPy/CLI 12: during one long LM call no report comes, yet the line's clock moves."""
    from serc_dspy.commands import progress as progress_module

    clock = iter([100.0, 103.0, 153.0])
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: next(clock))
    progress = StageProgress(quiet=False)  # not a terminal here: no ticker thread
    progress("detect", 1, 4)
    progress.tick()  # what the ticker does every second on a terminal
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("[serc    3.0s] detect: 1/4 checks")
    assert lines[1].startswith("[serc   53.0s] detect: 1/4 checks")
