"""The entity firewall's hardening, one test per branch, under a scripted LM."""

import dspy
import pytest
from scripted import CountingRetriever, entity, scripted_lm
from test_serc import DRAFT, handlers

from serc_dspy import SERC, LocalCorpus
from serc_dspy.core.entities import Descriptor
from serc_dspy.core.text import normalise_name
from serc_dspy.rules import RuleSet
from serc_dspy.rules.names import mentions, same_name

GROUNDED = "Marie Curie was a physicist and chemist born in Warsaw who won two Nobel Prizes."


PAPER_RESET = {"firewall.asked_subject": False}
"""The paper's reset of an answer about the asked entity (Marie Curie) for evidence about
another: `firewall.asked_subject` passes such an answer, so these tests switch it off."""


def decode(draft=DRAFT, rules=None, **overrides):
    lm, engine = scripted_lm(handlers(**overrides))
    program = SERC(retriever=CountingRetriever(), rules=rules)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = program(question="Tell me a bio of Marie Curie.", draft=draft)
    return prediction.trace, engine


def test_same_normalised_name_passes_without_a_judge_call():
    trace, engine = decode(AnswerEntity=lambda i: entity("Dr. Marie  Curie", "physicist"),
                           EvidenceEntity=lambda i: entity("marie curie", "chemist"))
    assert trace.firewall.same_entity is True and not trace.firewall.reset
    assert "no judge call" in trace.firewall.decision
    assert engine.of("SameEntity") == [] and engine.of("GroundedAnswer") == []
    assert trace.received == DRAFT


@pytest.mark.parametrize("evidence", [entity(""), entity("Name", "Characteristic"),
                                      entity("Unknown"), entity("N/A")])
def test_an_unusable_evidence_descriptor_never_resets(evidence):
    trace, engine = decode(EvidenceEntity=lambda i: evidence,
                           SameEntity=lambda i: {"analysis": "Different.", "same": "NO"})
    assert not trace.firewall.reset and engine.of("SameEntity") == []
    assert "evidence descriptor is empty or a placeholder" in trace.firewall.decision
    assert trace.received == DRAFT
    assert trace.ruled("firewall.placeholder")


def test_an_echoed_format_is_stripped_and_then_names_match():
    trace, engine = decode(EvidenceEntity=lambda i: entity("Marie Curie (Characteristic)",
                                                           "Characteristic"))
    assert trace.firewall.evidence_entity == "Marie Curie"
    assert trace.firewall.same_entity and engine.of("SameEntity") == []
    assert trace.received == DRAFT


def test_different_names_go_to_the_judge_and_a_yes_keeps_the_draft():
    # (the draft says "Marie Curie", so the evidence's name must be one it does not use)
    trace, engine = decode(AnswerEntity=lambda i: entity("Marie Curie", "physicist"),
                           EvidenceEntity=lambda i: entity("Maria Skłodowska", "chemist"),
                           QueryEntity=lambda i: entity(""))
    assert len(engine.of("SameEntity")) == 1
    assert trace.firewall.same_entity is True and not trace.firewall.reset
    assert "judge found the same entity" in trace.firewall.decision
    assert trace.received == DRAFT


def test_a_judged_mismatch_of_two_usable_descriptors_resets_and_keeps_the_replaced_draft():
    trace, engine = decode(EvidenceEntity=lambda i: entity("Pierre Curie", "physicist"),
                           SameEntity=lambda i: {"analysis": "Another person.", "same": "NO"},
                           rules=PAPER_RESET)
    firewall = trace.firewall
    assert firewall.reset and firewall.same_entity is False
    assert firewall.decision.startswith("reset:") and "Pierre Curie" in firewall.decision
    assert firewall.replaced_answer == DRAFT
    assert trace.received == GROUNDED and trace.subject == "Pierre Curie (physicist)"
    assert len(engine.of("GroundedAnswer")) == 1


BEENIE = {"beenie.txt": "Beenie Man is a Jamaican dancehall deejay. Beenie Man won a Grammy "
                         "Award in 2001 for the album Art and Life."}
STAGE_NAME_DRAFT = ("Moses Anthony Davis, known professionally as Beenie Man, is a Jamaican "
                    "dancehall deejay. He won a Grammy Award in 2001.")


WENDY = {"wendy.txt": "Wendy is a South Korean singer. Wendy debuted with Red Velvet in 2014."}
ONE_WORD_STAGE_NAME_DRAFT = ("Shon Seung-wan, known professionally as Wendy, is a South Korean "
                             "singer. She debuted with Red Velvet in 2014.")


def _stage_name_run(name, birth_name, corpus, draft, rules=None):
    lm, engine = scripted_lm(handlers(
        QueryEntity=lambda i: entity(name),
        AnswerEntity=lambda i: entity(birth_name, "singer"),
        EvidenceEntity=lambda i: entity(name, "musician"),
        SameEntity=lambda i: {"analysis": "Different names.", "same": "NO"}))
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        trace = SERC(retriever=CountingRetriever(LocalCorpus.from_texts(corpus)), rules=rules)(
            question=f"Tell me a bio of {name}.", draft=draft).trace
    return trace, engine


@pytest.mark.parametrize(("name", "birth_name", "corpus", "draft", "rules"), [
    ("Beenie Man", "Moses Anthony Davis", BEENIE, STAGE_NAME_DRAFT, None),
    # A one-word name counts where the draft gives it as its subject's name (opt-in).
    ("Wendy", "Shon Seung-wan", WENDY, ONE_WORD_STAGE_NAME_DRAFT, {"firewall.known_as": True}),
])
def test_an_answer_that_names_the_asked_entity_passes_whatever_name_its_descriptor_took(
        name, birth_name, corpus, draft, rules):
    trace, engine = _stage_name_run(name, birth_name, corpus, draft, rules)
    assert not trace.firewall.reset and trace.received == draft
    assert f"names the asked entity ({name})" in trace.firewall.decision
    assert engine.of("SameEntity") == [] and trace.subject == f"{name} (musician)"


def test_a_one_word_stage_name_still_passes_with_known_as_off_by_default():
    # `firewall.known_as` is off by default; the draft naming the evidence's entity passes
    trace, engine = _stage_name_run("Wendy", "Shon Seung-wan", WENDY, ONE_WORD_STAGE_NAME_DRAFT)
    assert not trace.firewall.reset and trace.received == ONE_WORD_STAGE_NAME_DRAFT
    assert trace.ruled("firewall.evidence_in_answer") and not trace.ruled("firewall.known_as")
    assert engine.of("SameEntity") == []


def test_the_subject_takes_the_evidence_characteristic_over_the_questions_guess():
    # The query descriptor is written from the question alone; its characteristic is a guess.
    lm, _ = scripted_lm(handlers(
        QueryEntity=lambda i: entity("Beenie Man", "American actor, producer, and director"),
        AnswerEntity=lambda i: entity("Moses Anthony Davis", "dancehall deejay"),
        EvidenceEntity=lambda i: entity("Beenie Man", "musician")))
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        trace = SERC(retriever=CountingRetriever(LocalCorpus.from_texts(BEENIE)))(
            question="Tell me a bio of Beenie Man.", draft=STAGE_NAME_DRAFT).trace
    assert trace.subject == "Beenie Man (musician)"


def test_a_fact_grounded_only_in_the_subjects_characteristic_is_dropped():
    # "physicist and chemist" is the subject's characteristic, not in the painting sentence.
    invented = "Marie Curie was a physicist and chemist."
    trace, _ = decode(AtomicFacts=lambda i: {"facts": [invented, "Marie Curie enjoyed painting "
                                                       "landscapes."]
                                             if "painting" in i["sentence"] else [i["sentence"]]})
    assert trace.subject == "Marie Curie (physicist and chemist)"
    assert all(f.text != invented for f in trace.facts)
    assert [r.before for r in trace.ruled("hygiene.ungrounded")] == [invented]


def test_an_answer_that_never_names_the_asked_entity_still_goes_to_the_judge():
    lm, engine = scripted_lm(handlers(
        QueryEntity=lambda i: entity("Beenie Man"),
        AnswerEntity=lambda i: entity("Moses Anthony Davis", "banker"),
        EvidenceEntity=lambda i: entity("Beenie Man", "musician"),
        SameEntity=lambda i: {"analysis": "A banker is not a deejay.", "same": "NO"}))
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        trace = SERC(retriever=CountingRetriever(LocalCorpus.from_texts(BEENIE)))(
            question="Tell me a bio of Beenie Man.",
            draft="Moses Anthony Davis is a banker in Kingston who founded two banks.").trace
    assert len(engine.of("SameEntity")) == 1 and trace.firewall.reset


def test_a_failing_judge_passes_and_is_logged():
    def broken(inputs):
        raise RuntimeError("judge crashed")

    trace, _ = decode(EvidenceEntity=lambda i: entity("Pierre Curie", "physicist"),
                      SameEntity=broken, rules=PAPER_RESET)
    assert not trace.firewall.reset and trace.received == DRAFT
    assert "judge failed" in trace.firewall.decision
    assert any(e.kind == "error" and e.phase == "firewall" for e in trace.errors)


def test_an_empty_answer_descriptor_passes():
    trace, engine = decode(AnswerEntity=lambda i: entity(""),
                           SameEntity=lambda i: {"analysis": "x", "same": "NO"})
    assert not trace.firewall.reset and engine.of("SameEntity") == []
    assert "answer descriptor" in trace.firewall.decision


def test_mentions_needs_the_whole_name_in_order():
    assert mentions("Davis, known professionally as Beenie Man, is...", "Beenie Man")
    assert not mentions("Beenie is a man", "Beenie Man")
    assert not mentions("Ronaldo played for Real Madrid", "Ronaldo")  # one word is too weak
    # ... except where the text gives it as its subject's name (`firewall.known_as`, opt-in).
    known_as = RuleSet({"firewall.known_as": True})
    assert mentions("Shon Seung-wan (born 1994), known professionally as Wendy, is a singer.",
                    "Wendy", known_as)
    assert mentions("Cristiano Ronaldo, better known as Ronaldo, is ...", "Ronaldo", known_as)
    assert not mentions("She is known as a singer who admired Wendy.", "Wendy", known_as)
    assert not mentions("Cristiano Ronaldo, better known as Ronaldo, is ...", "Ronaldo")


def test_name_helpers():
    assert normalise_name("Dr. Maria Skłodowska-Curie (physicist)") == "maria sklodowska curie"
    # anyascii spells every Latin letter out, not only those NFKD splits; no other script
    assert normalise_name("Đorđe Æbelø") == "dorde aebelo" == normalise_name("Dorde Aebelo")
    assert normalise_name("Ｃurie") == "curie" and normalise_name("居里夫人") == "居里夫人"
    assert same_name("Marie Curie", "Marie Skłodowska Curie")
    assert not same_name("Curie", "Pierre Curie")  # one shared word is not one name
    assert not same_name("Marie Curie", "Pierre Curie")
    # A short given name that begins the longer one, with the same surname
    # (`firewall.short_given_name`, on by default).
    short = RuleSet({"firewall.short_given_name": True})
    assert same_name("Kim Burrell", "Kimberly Jean Burrell", short)
    assert same_name("Dan Charles", "Daniel Charles", short)
    assert not same_name("Dan Charles", "Daniel Charles",
                         RuleSet({"firewall.short_given_name": False}))
    assert not same_name("Kim Burrell", "Kimberly Jean Smith", short)
    assert not same_name("Al Smith", "Alfred Smith", short)  # too short to stand for a name
    assert not same_name("Jo Burrell", "Kimberly Burrell", short)
    assert str(Descriptor.of("Marie Curie", "Characteristic")) == "Marie Curie"
    assert not Descriptor.of("  name ", "").usable
