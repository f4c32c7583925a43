"""Compiled state files: JSON only, signature-hash guarded, round-trip exact, applied by SERC."""

import json
import re

import dspy
import pytest
from compiling_helpers import demo_lm

import serc_dspy.runtime.states as state_module
from serc_dspy import SERC
from serc_dspy.compiling import (
    FORMAT_VERSION,
    CompiledStateError,
    load_compiled,
    read_compiled,
    save_compiled,
    signature_hash,
)
from serc_dspy.compiling.compile import StageProgram, stage_program
from serc_dspy.signatures import JudgeFact

DEMOS = [
    dspy.Example(evidence="The alpha comet is real.", claim="The alpha comet exists.",
                 verdict="SUPPORTED").with_inputs("evidence", "claim"),
    dspy.Example(evidence="The beta comet was never seen.", claim="The beta comet was seen.",
                 verdict="CONTRADICTED").with_inputs("evidence", "claim"),
    dspy.Example(evidence="Cats purr.", claim="The gamma comet is green.",
                 verdict="NOT_FOUND").with_inputs("evidence", "claim"),
]
PROBES = [("Some evidence.", "Was the beta comet seen?"), ("Other.", "Is gamma green?"),
          ("More.", "Does the alpha comet exist?")]


def compiled_verifier() -> StageProgram:
    program = stage_program("verify")
    program.predictor.demos = [d.copy() for d in DEMOS]
    return program


def predict(program, predictor_name="single_verifier"):
    lm, _ = demo_lm()
    predictor = getattr(program, predictor_name)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        return [predictor(evidence=e, claim=c).verdict for e, c in PROBES]


def test_save_writes_versioned_json_with_stage_hashes(tmp_path):
    path = save_compiled(compiled_verifier(), tmp_path / "v.json", {"how": "test"},
                         reference=stage_program("verify"))
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["format_version"] == FORMAT_VERSION
    assert document["serc_dspy_version"] == __import__("serc_dspy").__version__
    stage = document["stages"]["single_verifier"]
    assert stage["hash"] == signature_hash(JudgeFact)
    assert stage["signature"] == "JudgeFact"
    assert stage["prompt_text"] == "unchanged"
    assert stage["demos"] == 3
    assert document["state"]["single_verifier"]["demos"][1]["verdict"] == "CONTRADICTED"
    assert document["state"]["single_verifier"]["lm"] is None
    assert document["meta"] == {"how": "test"}


def test_signature_hash_ignores_wording_but_not_structure():
    reworded = JudgeFact.with_instructions("Entirely different words.")
    assert signature_hash(reworded) == signature_hash(JudgeFact)
    renamed = dspy.Signature({"passage": JudgeFact.fields["evidence"],
                              "claim": JudgeFact.fields["claim"],
                              "verdict": JudgeFact.fields["verdict"]}, "x")
    assert signature_hash(renamed) != signature_hash(JudgeFact)
    retyped = JudgeFact.with_updated_fields("verdict", type_=str)
    assert signature_hash(retyped) != signature_hash(JudgeFact)


def test_round_trip_gives_identical_predictions(tmp_path):
    program = compiled_verifier()
    expected = predict(program)
    assert expected == ["CONTRADICTED", "NOT_FOUND", "SUPPORTED"]  # the demos steer it
    assert predict(stage_program("verify")) == ["SUPPORTED"] * 3  # without demos it does not
    path = save_compiled(program, tmp_path / "v.json", reference=stage_program("verify"))
    fresh = stage_program("verify")
    load_compiled(fresh, path)
    assert predict(fresh) == expected
    assert fresh.predictor.dump_state() == program.predictor.dump_state()
    serc = SERC(compiled=path)
    assert predict(serc) == expected


def test_serc_compiled_applies_demos_and_serc_load_builds_one(tmp_path):
    path = save_compiled(compiled_verifier(), tmp_path / "v.json")
    serc = SERC(compiled=path, use_retrieval=False)
    assert [d["claim"] for d in serc.single_verifier.demos] == [d.claim for d in DEMOS]
    assert serc.verifier.demos == [] and serc.corrector.demos == []  # other stages untouched
    built = SERC.load(path, max_facts_per_check=1)
    assert isinstance(built, SERC) and built.max_facts_per_check == 1
    assert len(built.single_verifier.demos) == 3
    assert SERC().single_verifier.demos == []


def test_instance_load_keeps_dspy_in_place_semantics(tmp_path):
    source = SERC()
    source.single_verifier.demos = [d.copy() for d in DEMOS]
    source.save(str(tmp_path / "plain.json"))
    target = SERC()
    assert target.load(str(tmp_path / "plain.json")) is None  # DSPy's Module.load, in place
    assert len(target.single_verifier.demos) == 3


def test_serc_runs_with_compiled_demos_in_the_prompt(tmp_path):
    path = save_compiled(compiled_verifier(), tmp_path / "v.json")
    lm, engine = demo_lm({
        "AnswerQuestion": lambda i: {"answer": "unused"},
        "AtomicFacts": lambda i: {"facts": ["The beta comet was seen by many."]},
        "VerificationQuery": lambda i: {"query": "beta comet"},
        "ParametricEvidence": lambda i: {"evidence": "The beta comet was never seen."},
        "JudgeFact": lambda i: {"verdict": "NOT_FOUND" if not i["_demos"] else "SUPPORTED"},
        "PolishAnswer": lambda i: {"answer": i["draft"]},
    })
    serc = SERC(compiled=path, use_retrieval=False, firewall=False)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        result = serc(question="Tell me about the beta comet.",
                      draft="The beta comet was seen by many people in 1990.")
    judge_calls = [c for c in engine.calls if c["signature"] == "JudgeFact"]
    assert len(judge_calls) == 1
    index = engine.calls.index(judge_calls[0])
    assert engine.demos_seen[index] == 3
    assert result.trace.facts[0].verdict == "SUPPORTED"


def test_tampered_hash_warns_naming_the_stage_and_applies_the_demos(tmp_path, caplog):
    path = save_compiled(compiled_verifier(), tmp_path / "v.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    document["stages"]["single_verifier"]["hash"] = "0" * 16
    path.write_text(json.dumps(document), encoding="utf-8")
    program = stage_program("verify")
    with caplog.at_level("WARNING", logger="serc_dspy"):
        load_compiled(program, path)
    assert "stage 'single_verifier' was saved for a different signature" in caplog.text
    assert len(program.predictor.demos) == 3


def test_changed_signature_keeps_its_own_fields_instead_of_misaligning(tmp_path, caplog):
    path = save_compiled(compiled_verifier(), tmp_path / "v.json")
    changed = JudgeFact.prepend("source", dspy.InputField(desc="where it came from"), type_=str)
    program = StageProgram("single_verifier", dspy.Predict(changed))
    with caplog.at_level("WARNING", logger="serc_dspy"):
        load_compiled(program, path)
    assert re.search(r"stage 'single_verifier'.*source: str", caplog.text)
    signature = program.single_verifier.signature
    assert list(signature.fields) == ["source", "evidence", "claim", "verdict"]
    assert signature.fields["source"].json_schema_extra["desc"] == "where it came from"
    assert len(program.single_verifier.demos) == 3


def test_a_plain_dspy_save_loads_and_a_compile_file_loads_through_dspy(tmp_path):
    compiled = SERC()
    compiled.single_verifier.demos = [d.copy() for d in DEMOS]
    compiled.save(str(tmp_path / "plain.json"))  # DSPy's own format
    assert len(SERC.load(tmp_path / "plain.json").single_verifier.demos) == 3
    assert len(SERC(compiled=tmp_path / "plain.json").single_verifier.demos) == 3
    ours = save_compiled(compiled_verifier(), tmp_path / "ours.json")
    program = SERC()
    program.load(str(ours))  # DSPy's instance method, on a serc compile file
    assert len(program.single_verifier.demos) == 3
    program.save(str(tmp_path / "again.json"))  # and back to DSPy's format
    assert len(SERC.load(tmp_path / "again.json").single_verifier.demos) == 3


def test_unknown_stage_and_unchanged_prompt_text(tmp_path):
    path = save_compiled(compiled_verifier(), tmp_path / "v.json",
                         reference=stage_program("verify"))
    other = StageProgram("corrector", stage_program("correct").predictor)
    with pytest.raises(CompiledStateError, match="stage 'single_verifier' does not exist"):
        load_compiled(other, path)
    # "unchanged" prompt text: loading keeps the program's current instructions
    program = stage_program("verify")
    program.single_verifier.signature = JudgeFact.with_instructions("Newer wording.")
    load_compiled(program, path)
    assert program.single_verifier.signature.instructions == "Newer wording."
    assert len(program.single_verifier.demos) == 3


def test_optimized_instructions_are_restored(tmp_path):
    program = compiled_verifier()
    program.single_verifier.signature = JudgeFact.with_instructions("Optimised wording.")
    path = save_compiled(program, tmp_path / "v.json", reference=stage_program("verify"))
    assert read_compiled(path)["stages"]["single_verifier"]["prompt_text"] == "optimized"
    fresh = stage_program("verify")
    load_compiled(fresh, path)
    assert fresh.single_verifier.signature.instructions == "Optimised wording."


def test_pickles_are_refused(tmp_path):
    (tmp_path / "state.pkl").write_bytes(b"\x80\x04K\x01.")
    for call in (lambda: load_compiled(stage_program("verify"), tmp_path / "state.pkl"),
                 lambda: SERC(compiled=str(tmp_path / "state.pkl")),
                 lambda: SERC.load(tmp_path / "state.pkl"),
                 lambda: save_compiled(compiled_verifier(), tmp_path / "out.pkl")):
        with pytest.raises(CompiledStateError, match="pickle"):
            call()
    assert not (tmp_path / "out.pkl").exists()
    # a pickle renamed to .json is not JSON and is refused too
    (tmp_path / "renamed.json").write_bytes(b"\x80\x04K\x01.")
    with pytest.raises(CompiledStateError, match="not a JSON compiled state"):
        SERC(compiled=tmp_path / "renamed.json")


def test_format_version_and_foreign_files(tmp_path):
    path = save_compiled(compiled_verifier(), tmp_path / "v.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    document["format_version"] = FORMAT_VERSION + 1
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(CompiledStateError, match="newer serc-dspy"):
        SERC(compiled=path)
    plain = tmp_path / "plain.json"
    compiled_verifier().save(str(plain))  # a plain DSPy save of a stage program: it loads
    assert len(SERC(compiled=plain).single_verifier.demos) == 3
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"weights": [1, 2]}), encoding="utf-8")
    with pytest.raises(CompiledStateError, match="neither a serc-dspy compiled state"):
        SERC(compiled=foreign)
    with pytest.raises(CompiledStateError, match="not found"):
        SERC(compiled=tmp_path / "missing.json")
    with pytest.raises(CompiledStateError, match=".json"):
        save_compiled(compiled_verifier(), tmp_path / "v.txt")


def test_packaged_names_resolve(tmp_path, monkeypatch):
    folder = tmp_path / "compiled"
    folder.mkdir()
    save_compiled(compiled_verifier(), folder / "tiny.json")
    monkeypatch.setattr(state_module, "packaged_dir", lambda: folder)
    assert state_module.compiled_names() == ["tiny"]
    assert len(SERC(compiled="tiny").single_verifier.demos) == 3
    with pytest.raises(CompiledStateError, match="packaged names: tiny"):
        SERC(compiled="nothing_like_it")


def test_shipped_states_load_into_serc():
    names = state_module.compiled_names()
    if not names:
        pytest.skip("no compiled states are shipped")
    for name in names:
        document = read_compiled(name)
        serc = SERC(compiled=name)
        for stage, info in document["stages"].items():
            assert len(getattr(serc, stage).demos) == info["demos"]
        meta = document["meta"]
        commands = [meta["command"]] if "command" in meta else [p["command"]
                                                                for p in meta["parts"]]
        assert commands and all(c.startswith("serc compile") for c in commands)


def test_qwen_ships_a_state_that_beat_the_frozen_prompts_on_held_out_data():
    from serc_dspy.backends.models import MODELS

    name = MODELS["qwen1.5b"].compiled
    assert name in state_module.compiled_names()
    document = read_compiled(name)
    held_out = document["meta"]["held_out"]
    stage_of = {"fact_extractor": "facts", "corrector": "correct", "value_chooser": "choose"}
    assert {stage_of[s] for s in document["stages"]} == set(held_out)
    for figures in held_out.values():
        assert figures["compiled"] > figures["frozen"]
    assert MODELS["smollm2"].compiled is None


def test_a_models_packaged_state_is_applied_by_default_for_that_model_only(tmp_path,
                                                                           monkeypatch):
    import dataclasses

    from serc_dspy.backends import models

    path = save_compiled(compiled_verifier(), tmp_path / "verify_qwen.json")
    monkeypatch.setitem(models.MODELS, "qwen1.5b",
                        dataclasses.replace(models.QWEN, compiled=str(path)))

    def judge_demos(lm_name, **options):
        lm, engine = demo_lm({
            "AtomicFacts": lambda i: {"facts": ["The beta comet was seen by many."]},
            "VerificationQuery": lambda i: {"query": "beta comet"},
            "ParametricEvidence": lambda i: {"evidence": "The beta comet was seen by many."},
            "JudgeFact": lambda i: {"verdict": "SUPPORTED"},
            "PolishAnswer": lambda i: {"answer": i["draft"]},
        }, name=lm_name)
        serc = SERC(use_retrieval=False, firewall=False, **options)
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            result = serc(question="Tell me about the beta comet.",
                          draft="The beta comet was seen by many people in 1990.")
        calls = [i for i, c in enumerate(engine.calls) if c["signature"] == "JudgeFact"]
        return engine.demos_seen[calls[0]], serc, result

    demos, serc, result = judge_demos("qwen1.5b")
    assert demos == 3 and serc.model_state == "qwen1.5b"
    assert any("compiled state" in e.message for e in result.trace.events)
    assert judge_demos("some-other-model")[0] == 0
    assert judge_demos("qwen1.5b", compiled=None)[0] == 0  # the frozen prompts
    assert result.trace.prompts == "packaged state qwen1.5b"


def test_auto_never_replaces_demos_the_user_compiled_set_or_loaded(monkeypatch, tmp_path):
    import dataclasses

    from serc_dspy.backends import models

    path = save_compiled(compiled_verifier(), tmp_path / "verify_qwen.json")
    monkeypatch.setitem(models.MODELS, "qwen1.5b",
                        dataclasses.replace(models.QWEN, compiled=str(path)))
    lm, engine = demo_lm({
        "AtomicFacts": lambda i: {"facts": ["The beta comet was seen by many."]},
        "ParametricEvidence": lambda i: {"evidence": "The beta comet was seen by many."},
        "JudgeFact": lambda i: {"verdict": "SUPPORTED"},
        "PolishAnswer": lambda i: {"answer": i["draft"]},
    }, name="qwen1.5b")
    serc = SERC(use_retrieval=False, firewall=False)
    mine = dspy.Example(subject="s", sentence="One fact.", facts=["One fact."]).with_inputs(
        "subject", "sentence")
    serc.fact_extractor.demos = [mine]  # the user's own optimisation
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        result = serc(question="Tell me about the beta comet.",
                      draft="The beta comet was seen by many people in 1990.")
    assert serc.fact_extractor.demos == [mine]
    assert serc.single_verifier.demos == []  # nothing packaged filled in beside them either
    assert result.trace.prompts == "the program's own"
    assert any("was not applied" in e.message for e in result.trace.events)


def test_states_compiled_apart_merge_into_one_and_a_stage_twice_is_refused(tmp_path):
    verifier = save_compiled(compiled_verifier(), tmp_path / "v.json", {"made": "verify"})
    facts = stage_program("facts")
    facts.predictor.demos = [dspy.Example(subject="Ann", sentence="Ann sang.",
                                          facts=["Ann sang."]).with_inputs("subject",
                                                                           "sentence")]
    extractor = save_compiled(facts, tmp_path / "f.json", {"made": "facts"})
    merged = state_module.merge_compiled([verifier, extractor], tmp_path / "both.json",
                                         {"model": "m"})
    document = read_compiled(merged)
    assert set(document["stages"]) == {"single_verifier", "fact_extractor"}
    assert [p["made"] for p in document["meta"]["parts"]] == ["verify", "facts"]
    serc = SERC(compiled=merged)
    assert len(serc.single_verifier.demos) == 3 and len(serc.fact_extractor.demos) == 1
    with pytest.raises(CompiledStateError, match="single_verifier"):
        state_module.merge_compiled([verifier, merged], tmp_path / "again.json")
