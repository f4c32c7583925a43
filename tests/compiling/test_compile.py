"""Compiling stages under a demo-aware scripted LM, and the `serc compile` command."""

import importlib.util
import json

import dspy
import pytest
from compiling_helpers import demo_lm, make_data_dir, stance_rows, write_jsonl

from serc_dspy import SERC
from serc_dspy.cli import main
from serc_dspy.compiling import read_compiled
from serc_dspy.compiling.compile import (
    compile_stage,
    evaluate_stage,
    load_stage_data,
    save_results,
    stage_program,
)
from serc_dspy.compiling.devsets import load_verdict_examples
from serc_dspy.core.errors import UserError


@pytest.fixture
def verdict_split(tmp_path):
    write_jsonl(tmp_path / "stances.jsonl", stance_rows(per_label=8))
    return load_verdict_examples(tmp_path / "stances.jsonl", train=6, dev=9, balanced=True)


@pytest.mark.parametrize("optimizer", ["labeled", "bootstrap"])
def test_compile_verify_stage_changes_demos_improves_dev_and_saves(tmp_path, verdict_split,
                                                                   optimizer):
    lm, engine = demo_lm()
    result = compile_stage("verify", verdict_split, lm=lm, optimizer=optimizer, demos=3)
    demos = result.program.predictor.demos
    assert len(demos) == 3
    assert stage_program("verify").predictor.demos == []  # SERC's own predictor untouched
    assert result.before.score == pytest.approx(100 / 3, abs=0.01)  # always SUPPORTED
    assert result.before.macro_f1 == pytest.approx(0.1667, abs=1e-3)
    assert result.before.failures == result.after.failures == 0
    if optimizer == "labeled":  # the first k of a balanced split cover every verdict
        assert {d["verdict"] for d in demos} == {"SUPPORTED", "CONTRADICTED", "NOT_FOUND"}
        assert result.after.score == 100.0 and result.after.macro_f1 == 1.0
    else:  # bootstrapped demos are traces the teacher got right, topped up with labels
        assert any(d.get("augmented") for d in demos)
        assert result.after.score > result.before.score
        assert result.after.macro_f1 > result.before.macro_f1
    path = save_results([result], tmp_path / "verify.json", {"command": "test"})
    document = read_compiled(path)
    assert list(document["stages"]) == ["single_verifier"]
    assert document["stages"]["single_verifier"]["prompt_text"] == "unchanged"
    assert document["meta"]["stages"]["verify"]["after"]["score"] == result.after.score
    serc = SERC(compiled=path)
    assert [d["claim"] for d in serc.single_verifier.demos] == [d["claim"] for d in demos]


def test_failed_examples_are_counted_not_fatal(verdict_split):
    broken = [e.copy(claim="BROKEN " + e.claim) for e in verdict_split.dev[:2]]
    devset = broken + verdict_split.dev[2:]
    lm, _ = demo_lm()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        score = evaluate_stage(stage_program("verify"), devset, "verify")
    assert score.failures == 2 and score.n == len(devset)
    assert score.macro_f1 is not None


def test_compile_all_stages_into_one_serc_state(tmp_path):
    root = make_data_dir(tmp_path)
    lm, _ = demo_lm()
    results = []
    for stage in ("verify", "facts", "correct"):
        split = load_stage_data(stage, root, train=4, dev=4)
        assert split.train and split.dev
        results.append(compile_stage(stage, split, lm=lm, optimizer="labeled", demos=2))
    facts, correct = results[1], results[2]
    assert facts.before.score < facts.after.score == 100.0
    assert correct.before.score == 0.0 and correct.after.score == 100.0
    path = save_results(results, tmp_path / "serc.json")
    document = read_compiled(path)
    assert document["program"] == "SERC"
    assert set(document["stages"]) == {"single_verifier", "fact_extractor", "corrector"}
    serc = SERC(compiled=path)
    assert len(serc.fact_extractor.demos) == 2 and len(serc.corrector.demos) == 2
    assert serc.corrector.demos[0]["corrections"][0]["original"]  # FactFix saved as JSON


@pytest.fixture
def scripted_cli(monkeypatch):
    lm, engine = demo_lm()
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    return engine


def test_cli_compile_verify_prints_scores_and_saves(scripted_cli, tmp_path, capsys):
    root = make_data_dir(tmp_path)
    out = tmp_path / "out" / "verify.json"
    code = main(["compile", "--stage", "verify", "--optimizer", "labeled", "--train", "6",
                 "--dev", "6", "--demos", "3", "--data", str(root), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "stage verify (single_verifier), optimizer labeled" in captured.out
    assert "dev before: " in captured.out and "macro-F1" in captured.out
    assert "dev after:  " in captured.out
    assert "taken 6 train / 6 dev" in captured.err
    document = read_compiled(out)
    assert document["meta"]["command"].startswith("serc compile --stage verify")
    assert document["meta"]["stages"]["verify"]["demos"] == 3
    assert len(SERC(compiled=out).single_verifier.demos) == 3


def test_cli_compile_all(scripted_cli, tmp_path, capsys):
    root = make_data_dir(tmp_path)
    out = tmp_path / "all.json"
    code = main(["compile", "--stage", "all", "--train", "4", "--dev", "4", "--demos", "2",
                 "--data", str(root), "--out", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err == ""
    for stage in ("verify", "verify_cited", "facts", "correct", "choose"):
        assert f"stage {stage} " in captured.out
    assert set(read_compiled(out)["stages"]) == {"single_verifier", "fact_checker",
                                                 "fact_extractor", "corrector", "value_chooser"}


def test_cli_compile_takes_any_teleprompter_by_import_path(scripted_cli, tmp_path, capsys):
    root = make_data_dir(tmp_path)
    out = tmp_path / "first.json"
    code = main(["compile", "--stage", "verify", "--optimizer", "compiling_helpers:FirstDemo",
                 "--train", "4", "--dev", "4", "--data", str(root), "--out", str(out),
                 "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert len(SERC(compiled=out).single_verifier.demos) == 1


@pytest.mark.parametrize("argv, message", [
    (["--optimizer", "NoSuchOptimizer"], "unknown optimizer 'NoSuchOptimizer'"),
    (["--optimizer", "json:dumps"], "unknown optimizer 'json:dumps'"),
    (["--out", "x.pkl"], "pickle files are refused"),
    (["--out", "x.txt"], "use a .json path"),
    (["--train", "0"], "--train must be at least 1"),
    (["--data", "/nonexistent/data"], "data path not found"),
])
def test_cli_compile_user_errors(scripted_cli, tmp_path, capsys, argv, message):
    root = make_data_dir(tmp_path)
    base = {"--stage": "verify", "--data": str(root), "--out": str(tmp_path / "v.json")}
    for flag, value in zip(argv[::2], argv[1::2], strict=True):
        base[flag] = value
    args = ["compile"] + [item for pair in base.items() for item in pair]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "v.json").exists()


def test_missing_stage_files_are_user_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="subtask3_claim_evidence_stance"):
        load_stage_data("verify", tmp_path / "empty", train=1, dev=1)
    with pytest.raises(UserError, match="FActScore"):
        load_stage_data("facts", tmp_path / "empty", train=1, dev=1)


@pytest.mark.skipif(importlib.util.find_spec("optuna") is not None, reason="optuna installed")
def test_mipro_without_optuna_is_a_clear_user_error(verdict_split):
    lm, _ = demo_lm()
    with pytest.raises(UserError, match="optuna"):
        compile_stage("verify", verdict_split, lm=lm, optimizer="mipro")


def test_saved_state_is_plain_json(tmp_path, verdict_split):
    lm, _ = demo_lm()
    result = compile_stage("verify", verdict_split, lm=lm, optimizer="labeled", demos=3)
    path = save_results([result], tmp_path / "v.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["format"] == "serc-dspy-compiled-state"


def test_cli_compile_fails_and_saves_nothing_when_every_dev_example_fails(monkeypatch, tmp_path,
                                                                          capsys):
    from scripted import scripted_lm

    def refuse(inputs):
        raise ConnectionRefusedError("connection refused")

    lm, _ = scripted_lm({"JudgeFact": refuse})
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    root = make_data_dir(tmp_path)
    out = tmp_path / "verify.json"
    code = main(["compile", "--stage", "verify", "--optimizer", "labeled", "--train", "3",
                 "--dev", "3", "--demos", "1", "--data", str(root), "--out", str(out),
                 "--quiet"])
    assert code == 1 and not out.exists()
    assert "every dev example failed" in capsys.readouterr().err


@pytest.mark.parametrize("verbose", [False, True])
def test_cli_compile_keeps_dspys_own_log_lines_for_verbose(scripted_cli, tmp_path, verbose):
    """DSPy/CLI 12: by default the command's own progress only; DSPy's INFO lines (Evaluate's
    averages, the optimizers' traces) with --verbose."""
    import logging

    class Lines(logging.Handler):
        def __init__(self):
            super().__init__()
            self.records = []

        def emit(self, record):
            self.records.append(record)

    logger, lines = logging.getLogger("dspy"), Lines()
    level = logger.level
    logger.addHandler(lines)
    try:
        root = make_data_dir(tmp_path)
        code = main(["compile", "--stage", "verify", "--optimizer", "labeled", "--train", "4",
                     "--dev", "4", "--demos", "2", "--data", str(root),
                     "--out", str(tmp_path / "v.json"), *(["--verbose"] if verbose else [])])
    finally:
        logger.removeHandler(lines)
    assert code == 0
    assert bool([r for r in lines.records if r.levelno < logging.WARNING]) == verbose
    assert logger.level == level  # restored after the command
