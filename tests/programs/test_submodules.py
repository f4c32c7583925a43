"""SERC's phases as DSPy modules of their own: each runs alone with a scripted LM, and states
saved before the split still load into the composed program."""

import dspy
from scripted import CountingRetriever, entity, scripted_lm
from test_serc import FACTS, S0, handlers

from serc_dspy import SERC, StrictJSONAdapter
from serc_dspy.programs.serc import (
    PREDICTOR_PATHS,
    CheckNodes,
    Corrector,
    EntityFirewall,
    Reconstructor,
)
from serc_dspy.runtime.states import load_compiled, read_compiled, save_compiled


def _lm(**overrides):
    lm, engine = scripted_lm(handlers(**overrides))
    return lm, engine


def test_the_firewall_runs_alone_and_resets_only_on_a_different_entity():
    lm, engine = _lm(EvidenceEntity=lambda i: entity("Pierre Curie", "physicist"),
                     SameEntity=lambda i: {"analysis": "", "same": "NO"})
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        decision = EntityFirewall()(question="Tell me a bio of Marie Curie.",
                                    answer="Marie Curie was born in Kraków.",
                                    context=["Pierre Curie was a French physicist."])
    assert decision.reset and "different entities" in decision.decision
    assert decision.answer != "Marie Curie was born in Kraków."  # the grounded answer
    assert len(engine.of("SameEntity")) == 1


def test_the_check_nodes_run_alone_on_one_sentence():
    lm, _ = _lm()
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        result = CheckNodes(retriever=CountingRetriever())(subject="Marie Curie", sentence=S0)
    assert [f.text for f in result.facts] == FACTS[S0]
    assert {f.verdict for f in result.facts} == {"CONTRADICTED", "SUPPORTED"}
    assert result.checks and result.checks[0].passages


def test_the_corrector_runs_alone():
    lm, _ = _lm()
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        result = Corrector()(subject="Marie Curie", evidence="Marie Curie was born in Warsaw.",
                             erroneous_facts=["Marie Curie was born in Kraków."])
    assert result.facts[0].status == "corrected"
    assert result.facts[0].correction == "Marie Curie was born in Warsaw."


def test_the_reconstructor_runs_alone_with_its_guards():
    lm, engine = _lm(RewriteSentence=lambda i: {"sentence": "Ok."})
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        result = Reconstructor()(subject="Marie Curie", sentence=S0,
                                 facts=["Marie Curie was born in Warsaw in 1867."])
    assert engine.of("RewriteSentence")
    guards = [r.rule for r in result.rulings if r.rule != "rewrite.orphan"]
    assert guards[:1] == ["rewrite.too_short"]
    assert result.sentence  # a fallback, never "Ok."


def test_serc_composes_the_modules_and_keeps_the_old_predictor_names():
    serc = SERC(retriever=CountingRetriever())
    paths = [name for name, _ in serc.named_predictors()]
    assert "checks.fact_extractor" in paths and "correction.corrector" in paths
    assert serc.fact_extractor is serc.checks.fact_extractor  # the name before the split
    assert all(PREDICTOR_PATHS[name] in paths for name in PREDICTOR_PATHS)


def test_a_state_saved_before_the_split_still_loads(tmp_path):
    # the shipped qwen1.5b state names its stages as SERC did before the split
    shipped = read_compiled("qwen1.5b")
    assert set(shipped["stages"]) == {"fact_extractor", "corrector", "value_chooser"}
    serc = SERC(retriever=CountingRetriever(), compiled="qwen1.5b")
    assert serc.checks.fact_extractor.demos and serc.correction.corrector.demos
    assert serc.choice.value_chooser.demos
    # a state saved now names the paths, and loads back the same
    path = save_compiled(serc, tmp_path / "state.json")
    again = SERC(retriever=CountingRetriever(), compiled=None)
    load_compiled(again, path)
    assert len(again.checks.fact_extractor.demos) == len(serc.checks.fact_extractor.demos)
    assert "checks.fact_extractor" in read_compiled(path)["stages"]
