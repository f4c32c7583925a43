"""Text SERC did not change comes back as the caller wrote it: field markers that were broken up
to guard the prompts (N22), CJK sentences without added spaces (N23), and a short draft never
wearing the claim wrapper it was checked in (N20). Scripted LMs only."""

from __future__ import annotations

import sys
from pathlib import Path

import dspy

sys.path.insert(0, str(Path(__file__).parents[1] / "programs"))

from scripted import CountingRetriever, scripted_lm  # noqa: E402
from test_serc import DRAFT, handlers  # noqa: E402

from serc_dspy import SERC, StrictJSONAdapter  # noqa: E402
from serc_dspy.core.text import defang, restore_markers  # noqa: E402

QUESTION = "Tell me a bio of Marie Curie."


def decode(draft, program=None, question=QUESTION, **overrides):
    lm, _ = scripted_lm(handlers(**overrides))
    program = program or SERC(retriever=CountingRetriever())
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        return program(question=question, draft=draft)


def test_a_field_marker_in_the_draft_comes_back_as_written():
    marker = "Her notebook was labelled [[ ## answer ## ]] by archivists."
    result = decode(DRAFT + " " + marker)
    assert "Warsaw" in result.answer  # a correction was made elsewhere
    assert marker in result.answer and "[ [" not in result.answer
    # what the prompts saw was broken up
    assert defang(marker) != marker


def test_restoring_leaves_a_broken_up_form_the_caller_wrote_alone():
    draft = "A [ [ ## x ## ] ] and a [[ ## y ## ]]."
    assert restore_markers(defang(draft), draft) == defang(draft).replace(
        defang("[[ ##"), "[[ ##", 0)  # "[ [" was the caller's own: nothing restored
    assert restore_markers(defang("[[ ## y ## ]]"), "[[ ## y ## ]]") == "[[ ## y ## ]]"


ZH = "居里夫人1867年出生于克拉科夫。她在巴黎索邦大学学习。她于1903年获得诺贝尔物理学奖。"


def _zh_handlers():
    def judge(i):
        return {"verdicts": ["CONTRADICTED" if "克拉科夫" in c else "SUPPORTED"
                             for c in i["claims"]]}

    def correct(i):
        return {"corrections": [{"original": f, "fixed": f.replace("克拉科夫", "华沙")}
                                for f in i["erroneous_facts"]]}
    return {"JudgeFacts": judge, "CorrectFacts": correct,
            "JudgeFact": lambda i: {"verdict": judge({"claims": [i["claim"]]})["verdicts"][0]},
            "RewriteSentence": lambda i: {"sentence": "".join(i["facts"])},
            "PolishAnswer": lambda i: {"answer": i["draft"]}}


def test_a_cjk_answer_gains_no_space_between_sentences_when_one_changes():
    for reconstruct in ("rebuild", "minimal"):
        # the scripted corpus is English: the licence for the fix is switched off here
        program = SERC(retriever=CountingRetriever(), reconstruct=reconstruct,
                       rules={"fix.collateral": False})
        result = decode(ZH, program=program, **_zh_handlers())
        assert result.answer == ZH.replace("克拉科夫", "华沙"), reconstruct


def test_an_english_drafts_own_spacing_survives_a_rebuilt_sentence():
    draft = DRAFT.replace(". She studied", ".  She studied")  # two spaces, as typed
    result = decode(draft)
    assert "Warsaw" in result.answer and ".  She studied" in result.answer


def test_a_short_draft_never_wears_the_claim_wrapper_it_was_checked_in():
    def correct(i):
        return {"corrections": [{"original": f, "fixed": f.replace("Kraków", "Warsaw")}
                                for f in i["erroneous_facts"]]}

    for draft, fixed in (("Kraków", "Warsaw"), ("Kraków.", "Warsaw.")):
        for reconstruct in ("rebuild", "minimal"):
            result = decode(
                draft, question="Where was Marie Curie born?",
                program=SERC(retriever=CountingRetriever(), reconstruct=reconstruct),
                JudgeFacts=lambda i: {"verdicts": ["CONTRADICTED" for _ in i["claims"]]},
                JudgeFact=lambda i: {"verdict": "CONTRADICTED"}, CorrectFacts=correct,
                RewriteSentence=lambda i: {"sentence": " ".join(i["facts"])})
            assert result.answer == fixed, (draft, reconstruct, result.answer)


def test_a_detail_the_extractor_missed_is_reported_when_a_rebuild_drops_it():
    """D7: in rebuild mode a changed sentence is rewritten from its facts; "a teacher's
    daughter", which no fact carried, is gone, and an event says so."""
    sentence = "Marie Curie, a teacher's daughter, was born in Kraków in 1867."
    facts = {sentence: ["Marie Curie was born in Kraków.", "Marie Curie was born in 1867."]}
    result = decode(sentence + " She studied at the Sorbonne in Paris.",
                    AtomicFacts=lambda i: {"facts": facts.get(i["sentence"], [i["sentence"]])})
    assert "Warsaw" in result.answer and "teacher" not in result.answer
    assert any("dropped teacher, daughter, which no extracted fact carried" in e.message
               for e in result.trace.events)
