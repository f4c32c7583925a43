"""One run configuration behind every command: `serc_dspy.config` (RunOptions and its builders)."""

import argparse
import io
import json
import time

import pytest
from conftest import EXAMPLES, SHARED_DATA
from scripted import entity, reader, scripted_lm

from serc_dspy.cli import build_parser, main
from serc_dspy.commands.options import add_run_options
from serc_dspy.commands.progress import AssemblyProgress
from serc_dspy.config import (
    RunOptions,
    build_lm,
    build_retriever,
    build_stage_lms,
    method_options,
)
from serc_dspy.core.errors import UserError
from serc_dspy.programs.registry import METHODS, build_method, get_method

DRAFT = "Marie Curie was born in Kraków in 1867. She studied at the Sorbonne in Paris."
BOUNDS = ["--deadline", "5", "--max-in-flight", "2", "--lm-rate", "2", "--lm-timeout", "30",
          "--search-rate", "1.5", "--stage-lm", "verify=openai/verifier"]
# Every subcommand that runs a method (or a stage of one), with its required arguments.
COMMANDS = {
    "ask": ["ask", "q?"],
    "correct": ["correct", "--question", "q?", "--draft", "d.txt"],
    "run": ["run", "--dataset", "bio", "--dataset-path", "e.txt", "--out", "o.jsonl"],
    "bench noise": ["bench", "noise", "--articles", "a.json", "--method", "serc", "--out", "o"],
    "bench factcheck": ["bench", "factcheck", "--data", "d.jsonl", "--method", "serc",
                        "--out", "o"],
    "bench halueval": ["bench", "halueval", "--data", "d.jsonl", "--out", "o"],
    "bench stages": ["bench", "stages", "--data", "d"],
    "compile": ["compile", "--stage", "verify", "--data", "d", "--out", "o.json"],
}


def _handlers(sleep: float = 0.0):
    def answer(inputs):
        time.sleep(sleep)
        return {"answer": DRAFT}

    return {
        "AnswerQuestion": answer,
        "QueryEntity": lambda i: entity("Marie Curie"),
        "AnswerEntity": lambda i: entity("Marie Curie", "physicist"),
        "EvidenceEntity": lambda i: entity("Marie Curie", "physicist"),
        "SameEntity": lambda i: {"analysis": "Same.", "same": "YES"},
        "AtomicFacts": lambda i: {"facts": [i["sentence"]]},
        "VerificationQuery": lambda i: {"query": "Marie Curie " + i["facts"][0]},
        "EvidenceSummary": lambda i: {"evidence": "Born in Warsaw; studied at the Sorbonne."},
        "JudgeFacts": lambda i: {"verdicts": ["SUPPORTED"] * len(i["claims"])},
        "JudgeFact": lambda i: {"verdict": "SUPPORTED"},
        "QuoteAndJudge": lambda i: {"quote": "", "verdict": "SUPPORTED"},
        "CorrectFacts": lambda i: {"corrections": []},
        "RewriteSentence": lambda i: {"sentence": " ".join(i["facts"])},
        "PolishAnswer": lambda i: {"answer": i["draft"]},
        "ChooseValue": reader({"Warsaw", "1867", "Sorbonne", "Paris"}),
        "ChooseSentence": lambda i: {"sentence": 0, "stance": "not stated"},
    }


# -- the shared flags ----------------------------------------------------------------------------
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_that_runs_a_method_takes_the_bounds_and_throttles(command):
    args = build_parser().parse_args([*COMMANDS[command], *BOUNDS])
    options = RunOptions.from_args(args)
    assert options.deadline == 5 and options.max_in_flight == 2 and options.lm_rate == 2
    assert options.lm_timeout == 30 and options.search_rate == 1.5
    assert options.stage_lms == {"verify": "openai/verifier"}
    assert options.lm == "qwen1.5b"  # one --lm, one default


@pytest.mark.parametrize("command", ["ask", "correct", "run", "bench noise", "bench factcheck",
                                     "bench halueval"])
def test_every_method_command_takes_the_method_options(command):
    args = build_parser().parse_args([*COMMANDS[command], "--top-k", "2", "--frozen",
                                      "--rule=-quote.overrule", "--fact-evidence",
                                      "--reconstruct", "minimal", "--no-firewall"])
    options = method_options(RunOptions.from_args(args))
    assert options["top_k"] == 2 and options["compiled"] is None
    assert options["rules"] == {"quote.overrule": False} and options["fact_evidence"]
    assert options["reconstruct"] == "minimal" and options["firewall"] is False


def test_the_namespace_is_never_changed():
    args = build_parser().parse_args(COMMANDS["run"])
    before = dict(vars(args))
    options = RunOptions.from_args(args)
    assert vars(args) == before and args.max_tokens is None and args.top_k is None
    assert options.max_tokens == 512 and options.top_k == 3 and options.workers == 4


def test_unset_values_come_from_the_lm_run_defaults():
    qwen, smol = RunOptions(), RunOptions(lm="smollm2")
    server = RunOptions(lm="openai=http://127.0.0.1:1/v1#m", top_k=5)
    assert (qwen.lm, qwen.max_tokens, qwen.top_k, qwen.queries) == ("qwen1.5b", 512, 3, "facts")
    assert (smol.max_tokens, smol.workers) == (256, 2)
    assert (server.max_tokens, server.top_k, server.context_chars, server.workers) == \
        (512, 5, 20_000, 8)
    assert (server.queries, server.evidence, server.verdicts) == ("lm", "summary", "check")
    assert RunOptions(lm=None).lm == "qwen1.5b"  # an empty --lm is refused (test_small_contracts)


@pytest.mark.parametrize("values, message", [
    ({"lm_rate": 0.0000001}, "--lm-rate must be a finite number"),
    ({"search_rate": float("inf")}, "--search-rate must be a finite number"),
    ({"rules": ["-no.such"]}, "unknown rule 'no.such'"),
    ({"rules": ["quote.overrule"]}, r"--rule takes \+ID or -ID"),
    ({"stage_lms": ["verify"]}, "--stage-lm needs STAGE=SPEC"),
    ({"compiled": " "}, "--compiled is empty"),
    ({"compiled": "x.json", "frozen": True}, "either --compiled or --frozen"),
    ({"top_k": 0}, "--top-k: Input should be greater than 0"),
    ({"queries": "web"}, "--queries"),
])
def test_a_bad_option_is_a_user_error_naming_the_flag(values, message):
    with pytest.raises(UserError, match=message):
        RunOptions(**values)


def test_options_are_immutable():
    options = RunOptions()
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        options.top_k = 9
    assert options.model_copy(update={"top_k": 9}).top_k == 9 and options.top_k == 3


def test_a_parser_without_run_options_is_refused():
    with pytest.raises(TypeError, match="add_run_options"):
        RunOptions.from_args(argparse.Namespace(lm="qwen1.5b"))


def test_skipped_flags_stay_the_command_s_own():
    parser = argparse.ArgumentParser()
    parser.add_argument("--evidence", choices=["auto", "human"], default="auto")
    add_run_options(parser, method=True, skip=["--evidence"])
    options = RunOptions.from_args(parser.parse_args(["--evidence", "human"]))
    assert options.evidence == "passages"  # the model's default, not the command's --evidence


# -- the method's options ----------------------------------------------------------------------
def test_method_options_hold_the_per_model_settings_and_only_what_was_set():
    assert method_options(RunOptions()) == {
        "top_k": 3, "context_chars": 2400, "max_workers": 4, "queries": "facts",
        "evidence": "passages", "verdicts": "choose", "reconstruct": "minimal",
        "serial_stages": ("decompose", "correct")}
    assert "reconstruct" not in method_options(RunOptions(lm="smollm2"))  # SERC's own default
    options = method_options(RunOptions(
        retrieval=False, density="atomic", max_facts_per_check=3, compiled="verify_smollm2",
        deadline=7), progress=print)
    assert options["use_retrieval"] is False and options["density"] == "atomic"
    assert options["max_facts_per_check"] == 3 and options["compiled"] == "verify_smollm2"
    assert options["deadline_s"] == 7 and options["progress"] is print


def test_serial_stages_come_from_the_flag_and_none_clears_them():
    parser = argparse.ArgumentParser()
    add_run_options(parser, method=True)
    options = RunOptions.from_args(parser.parse_args(
        ["--serial-stage", "decompose", "--serial-stage", "correct"]))
    assert options.serial_stages == ("decompose", "correct")
    assert method_options(options)["serial_stages"] == ("decompose", "correct")
    cleared = RunOptions.from_args(parser.parse_args(["--serial-stage", "none"]))
    assert cleared.serial_stages == () and "serial_stages" not in method_options(cleared)
    with pytest.raises(SystemExit):
        parser.parse_args(["--serial-stage", "decompse"])
    with pytest.raises(UserError, match="--serial-stage none means no stage"):
        RunOptions.from_args(parser.parse_args(["--serial-stage", "none", "--serial-stage",
                                                "correct"]))
    program = build_method("serc", None, **method_options(options))
    assert program.serial_stages == {"decompose", "correct"}


def test_stage_lms_are_built_by_the_one_builder_and_recorded_by_name():
    lms = build_stage_lms(RunOptions(stage_lms=["verify=openai/gpt-4o", "polish=smollm2"]))
    assert lms["verify"].model == "openai/gpt-4o" and set(lms) == {"verify", "polish"}
    assert repr(lms) == "{'verify': 'openai/gpt-4o', 'polish': 'local/smollm2'}"


def test_the_registry_says_which_methods_take_serc_options():
    assert get_method("serc").accepts_compiled and get_method("serc_dense").accepts("rules")
    assert not get_method("cove").accepts_compiled and not get_method("rarr").accepts("rules")
    assert get_method("rarr").accepts("top_k")
    assert {m.name for m in METHODS.values() if m.serc_options} == {
        "serc", "serc_dense", "serc_lean", "serc_no_rag", "serc_no_firewall"}
    program = build_method("cove", compiled="x.json", rules={"quote.overrule": False}, top_k=2)
    assert program.top_k == 2  # the SERC-only options were dropped


# -- the retriever -----------------------------------------------------------------------------
def test_the_retriever_is_source_then_throttle_then_cache(tmp_path):
    from serc_dspy.retrieval.cache import CachedRetriever
    from serc_dspy.retrieval.local import LocalCorpus
    from serc_dspy.runtime.throttle import RateLimited

    corpus = str(EXAMPLES / "corpus")
    cached = build_retriever(RunOptions(corpus=corpus, search_rate=2,
                                        cache=str(tmp_path / "cache")), "serc")
    assert isinstance(cached, CachedRetriever)
    assert isinstance(cached.retriever, RateLimited)
    assert isinstance(cached.retriever.retriever, LocalCorpus)
    assert isinstance(build_retriever(RunOptions(corpus=corpus, search_rate=2), "serc"),
                      RateLimited)
    assert isinstance(build_retriever(RunOptions(corpus=corpus), "initial"), LocalCorpus)


def test_the_retriever_precedence_and_its_errors(tmp_path):
    from serc_dspy.retrieval.knowledge import KnowledgeSource

    wiki = tmp_path / "wiki.json"
    wiki.write_text(json.dumps({"Marie Curie": "Marie Curie was born in Warsaw."}))
    assert isinstance(build_retriever(RunOptions(knowledge=str(wiki)), "serc"), KnowledgeSource)
    assert build_retriever(RunOptions(), "initial") is None  # needs none, none given
    assert build_retriever(RunOptions(retrieval=False), "serc") is None
    with pytest.raises(UserError, match="no retriever configured: pass --corpus"):
        build_retriever(RunOptions(), "serc")
    with pytest.raises(UserError, match="--dense ranks a local corpus"):
        build_retriever(RunOptions(dense=True, search="tavily"), "serc")
    with pytest.raises(UserError, match="not --corpus and --knowledge"):
        build_retriever(RunOptions(corpus=str(EXAMPLES / "corpus"), knowledge=str(wiki)), "serc")
    with pytest.raises(UserError, match="knowledge source not found"):
        build_retriever(RunOptions(knowledge=str(tmp_path / "none.json")), "serc")


def test_corpus_and_search_together_are_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["ask", "q", "--corpus", str(EXAMPLES / "corpus"), "--search", "tavily"])
    assert exit_info.value.code == 2 and "not allowed with" in capsys.readouterr().err


# -- the LM: one builder -------------------------------------------------------------------------
def test_build_lm_passes_the_bounds_and_throttles_to_the_backend(monkeypatch):
    seen = []
    monkeypatch.setattr("serc_dspy.backends.lm_from_spec",
                        lambda spec, **kwargs: seen.append((spec, kwargs)) or spec)
    options = RunOptions(lm="openai=http://127.0.0.1:1/v1#m", max_in_flight=2, lm_rate=3,
                         lm_timeout=30, quiet=True)
    assert build_lm(options) == "openai=http://127.0.0.1:1/v1#m"
    assert build_lm(options, "openai/judge") == "openai/judge"
    assert [kwargs for _, kwargs in seen] == [
        {"max_tokens": 512, "timeout": 30, "max_in_flight": 2, "rate": 3, "progress": None}] * 2


def test_the_lm_of_every_command_comes_from_the_one_builder(monkeypatch, capsys, tmp_path):
    """`serc ask`, `serc run` and `serc bench halueval` all build their LM with
    `config.build_lm`; nothing calls the backend factory around it."""
    lm, engine = scripted_lm(_handlers())
    built = []

    def builder(options, spec=None):
        built.append((spec or options.lm, options.max_in_flight))
        return lm

    monkeypatch.setattr("serc_dspy.config.build_lm", builder)
    monkeypatch.setattr("serc_dspy.backends.lm_from_spec",
                        lambda *a, **k: pytest.fail("an LM was built around config.build_lm"))
    assert main(["ask", "Tell me a bio of Marie Curie.", "--corpus", str(EXAMPLES / "corpus"),
                 "--quiet", "--lm", "openai/one", "--max-in-flight", "3"]) == 0
    entities = tmp_path / "entities.txt"
    entities.write_text("Marie Curie\n")
    assert main(["run", "--method", "serc", "--dataset", "bio", "--dataset-path", str(entities),
                 "--corpus", str(EXAMPLES / "corpus"), "--out", str(tmp_path / "r.jsonl"),
                 "--quiet", "--lm", "openai/two", "--max-in-flight", "4"]) == 0
    data = tmp_path / "qa.jsonl"
    data.write_text(json.dumps({"knowledge": "Marie Curie was born in Warsaw.",
                                "question": "Where was Marie Curie born?",
                                "right_answer": "Warsaw", "hallucinated_answer": "Kraków"})
                    + "\n")
    assert main(["bench", "halueval", "--data", str(data), "--limit", "1", "--out",
                 str(tmp_path / "h"), "--quiet", "--json", "--lm", "openai/three"]) == 0
    capsys.readouterr()
    assert built == [("openai/one", 3), ("openai/two", 4), ("openai/three", None)]
    assert engine.calls


def test_stage_lms_of_serc_run_come_from_the_one_builder(monkeypatch, capsys, tmp_path):
    main_lm, main_engine = scripted_lm(_handlers(), name="generator")
    verify_lm, verify_engine = scripted_lm(_handlers(), name="verifier")
    specs = {"qwen1.5b": main_lm, "openai/verifier": verify_lm}
    monkeypatch.setattr("serc_dspy.config.build_lm",
                        lambda options, spec=None: specs[spec or options.lm])
    entities = tmp_path / "entities.txt"
    entities.write_text("Marie Curie\n")
    out = tmp_path / "r.jsonl"
    assert main(["run", "--dataset", "bio", "--dataset-path", str(entities), "--corpus",
                 str(EXAMPLES / "corpus"), "--out", str(out), "--quiet",
                 "--stage-lm", "verify=openai/verifier"]) == 0
    capsys.readouterr()
    assert verify_engine.calls and main_engine.calls
    meta = json.loads((tmp_path / "r.meta.json").read_text())
    assert meta["options"]["lms"] == "{'verify': 'local/verifier'}"
    assert main(["run", "--dataset", "bio", "--dataset-path", str(entities), "--corpus",
                 str(EXAMPLES / "corpus"), "--out", str(out), "--quiet",
                 "--stage-lm", "verify=openai/verifier"]) == 0  # the same options: a resume
    assert "0 run (0 failed), 1 already done" in capsys.readouterr().out


# -- bounds given to `serc run` take effect ------------------------------------------------------
def test_serc_run_passes_its_throttles_and_timeout_to_the_lm(monkeypatch, capsys, tmp_path):
    lm, _ = scripted_lm(_handlers())
    seen = []
    monkeypatch.setattr("serc_dspy.backends.lm_from_spec",
                        lambda spec, **kwargs: seen.append((spec, kwargs)) or lm)
    entities = tmp_path / "entities.txt"
    entities.write_text("Marie Curie\n")
    assert main(["run", "--dataset", "bio", "--dataset-path", str(entities), "--corpus",
                 str(EXAMPLES / "corpus"), "--out", str(tmp_path / "r.jsonl"), "--quiet",
                 "--lm", "openai=http://127.0.0.1:1/v1#m", "--max-in-flight", "2",
                 "--lm-rate", "5", "--lm-timeout", "30"]) == 0
    capsys.readouterr()
    (spec, kwargs), = seen
    assert spec == "openai=http://127.0.0.1:1/v1#m"
    assert (kwargs["max_in_flight"], kwargs["rate"], kwargs["timeout"]) == (2, 5, 30)


def test_serc_run_deadline_bounds_each_item(monkeypatch, capsys, tmp_path):
    """The generated draft takes longer than `--deadline 1`: every later step degrades."""
    lm, engine = scripted_lm(_handlers(sleep=1.2))
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    entities = tmp_path / "entities.txt"
    entities.write_text("Marie Curie\n")
    out = tmp_path / "r.jsonl"
    main(["run", "--dataset", "bio", "--dataset-path", str(entities), "--corpus",
          str(EXAMPLES / "corpus"), "--out", str(out), "--quiet", "--deadline", "1"])
    capsys.readouterr()
    record = json.loads(out.read_text().splitlines()[0])
    messages = [e["message"] for e in record["trace"]["events"]]
    assert any("deadline of 1s" in m for m in messages), messages
    assert not engine.of("AtomicFacts")  # nothing started after the deadline
    assert json.loads((tmp_path / "r.meta.json").read_text())["options"]["deadline_s"] == 1


# -- a bound that cannot take effect is refused, not dropped ------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["bench", "stages", "--data", "d", "--deadline", "5"], "--deadline cannot apply here"),
    (["bench", "stages", "--data", "d", "--stage-lm", "verify=x"], "--stage-lm cannot apply"),
    (["compile", "--stage", "verify", "--data", "D", "--out", "o.json", "--deadline", "5"],
     "--stage serc"),
    (["bench", "halueval", "--data", "d.jsonl", "--out", "o", "--search-rate", "1"],
     "--search-rate cannot apply here"),
])
def test_a_bound_that_cannot_apply_is_refused(argv, message, monkeypatch, capsys):
    monkeypatch.setattr("serc_dspy.config.build_lm",
                        lambda *a, **k: pytest.fail("the LM was built"))
    argv = [str(SHARED_DATA) if a == "D" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("serc: error:")


class _Log(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_model_assembly_progress_writes_a_line_per_tenth_into_a_log_and_redraws_on_a_tty():
    log = _Log(tty=False)
    progress = AssemblyProgress(log)
    mib = 2**20
    for done in range(0, 101, 2):
        progress(done * mib, 100 * mib)
    progress(100 * mib, 100 * mib)
    lines = log.getvalue().splitlines()
    assert len(lines) == 11  # 0/10 … 10/10, the finished bar once
    assert "\r" not in log.getvalue()
    assert lines[-1].endswith("[" + "#" * 30 + "] 100/100 MiB")

    terminal = _Log(tty=True)
    progress = AssemblyProgress(terminal)
    for done in (0, 500, 1000):
        progress(done, 1000)
    assert terminal.getvalue().count("\r") == 2 and terminal.getvalue().endswith("MiB\n")
