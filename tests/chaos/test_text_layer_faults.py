"""The chaos suite, the text layer: non-English drafts against English-only rules, the
cost of sentence splitting, and drafts longer than `max_sentences`. Each test pins one defect
and asserts what stays in the answer, the status and event in the trace, and the exit code.
Scripted LMs only; no timing is bounded in absolute terms (speed figures live in
`benchmarks/split_speed.py`)."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import dspy
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "programs"))

from conftest import EXAMPLES  # noqa: E402
from faults import QUESTION  # noqa: E402
from scripted import CountingRetriever, scripted_lm  # noqa: E402
from test_serc import DRAFT, handlers  # noqa: E402

import serc_dspy.core.text as text_module  # noqa: E402
from serc_dspy import SERC, Trace  # noqa: E402
from serc_dspy.cli import main  # noqa: E402
from serc_dspy.core.errors import DecodingFailed  # noqa: E402
from serc_dspy.core.text import (  # noqa: E402
    SHORT_ANSWER_CHARS,
    SHORT_SENTENCE_CHARS,
    needs_cold_start,
    split_sentences,
    text_size,
    words,
)
from serc_dspy.programs.base import MAX_INPUT_CHARS, InputError  # noqa: E402
from serc_dspy.rules.hygiene import clean_facts, not_a_statement  # noqa: E402


def decode(program=None, draft=DRAFT, **overrides):
    lm, engine = scripted_lm(handlers(**overrides))
    program = program or SERC(retriever=CountingRetriever())
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = program(question=QUESTION, draft=draft)
    return prediction, engine


# -- 9. non-English drafts hit English-only rules ------------------------------------------
Z0 = "玛丽·居里于1867年出生在波兰的华沙。"
Z1 = "她因研究放射性两次获得诺贝尔奖。"  # no digit, no space: one "word" to str.split()
Z2 = "她死于1943年。"  # wrong: 1934; its correct rewrite is 9 characters
Z3 = "她和丈夫皮埃尔·居里一起发现了钋和镭两种元素。"
CHINESE_DRAFT = Z0 + Z1 + Z2  # 45 characters, 3 complete sentences
LONG_CHINESE_DRAFT = Z0 + Z1 + Z3 + Z2  # over 50 characters, so no length rule touches it


def chinese(**overrides):
    """Verdicts and fixes for the Chinese drafts: the death year is wrong, the rest true."""
    wrong = "1943"
    verdict = {"JudgeFact": lambda i: {"verdict": "CONTRADICTED" if wrong in i["claim"]
                                       else "SUPPORTED"},
               "JudgeFacts": lambda i: {"verdicts": ["CONTRADICTED" if wrong in c
                                                     else "SUPPORTED" for c in i["claims"]]},
               "CorrectFacts": lambda i: {"corrections": [
                   {"original": f, "fixed": f.replace(wrong, "1934")}
                   for f in i["erroneous_facts"]]}}
    return {**verdict, **overrides}


def test_a_complete_short_chinese_draft_is_decoded_not_replaced():
    assert len(CHINESE_DRAFT) == 45 < SHORT_ANSWER_CHARS
    assert text_size(CHINESE_DRAFT) >= SHORT_ANSWER_CHARS
    assert not needs_cold_start(CHINESE_DRAFT)
    assert needs_cold_start("不知道。")  # a genuinely short answer still is one
    prediction, engine = decode(draft=CHINESE_DRAFT, **chinese())
    trace = prediction.trace
    assert not trace.cold_start and engine.of("GroundedAnswer") == []
    assert trace.received == CHINESE_DRAFT and trace.status == "decoded"
    assert [s.text for s in trace.sentences] == [Z0, Z1, Z2]
    assert Z0 in prediction.answer and Z1 in prediction.answer


def test_chinese_sentences_are_split_on_their_own_sentence_ends():
    assert split_sentences("居里夫人出生在华沙。她获得了诺贝尔奖。她死于1934年。") == [
        "居里夫人出生在华沙。", "她获得了诺贝尔奖。", "她死于1934年。"]
    assert split_sentences("她获奖了！真的吗？是的。") == ["她获奖了！", "真的吗？", "是的。"]
    # a paragraph far past the block bound, without a space anywhere, still splits exactly
    long = LONG_CHINESE_DRAFT * 100
    assert len(long) > 3 * text_module.MAX_BLOCK_CHARS
    assert split_sentences(long) == [Z0, Z1, Z3, Z2] * 100


def test_chinese_sentences_are_statements_and_get_verified():
    assert words(Z1) == list("她因研究放射性两次获得诺贝尔奖")
    assert not_a_statement(Z1) is None and not_a_statement("她死了") is None
    assert not_a_statement("华沙") is not None  # two characters: still a fragment
    kept, dropped = clean_facts([Z1], Z1, "Marie Curie")
    assert kept == [Z1] and dropped == []
    _, dropped = clean_facts(["她出生于伦敦并在那里当了教师。"], Z1, "Marie Curie")
    assert dropped  # an invented fact is still not grounded in the sentence
    prediction, _ = decode(draft=LONG_CHINESE_DRAFT, **chinese())
    trace = prediction.trace
    assert len(trace.sentences) == 4
    for sentence in trace.sentences:  # every sentence got a fact, and every fact a verdict
        facts = [f for f in trace.facts if f.sentence == sentence.index]
        assert facts and all(f.verdict is not None for f in facts), sentence.text
    assert not any("fragment" in e.message for e in trace.events)
    assert Z1 in prediction.answer and trace.fact("f1.0").status == "kept"


def test_a_short_correct_chinese_rewrite_is_kept():
    # the scripted corpus never states 1934: the fix's licence (`fix.collateral`) is off here,
    # this test is about the rewrite's length guard
    program = SERC(retriever=CountingRetriever(), rules={"fix.collateral": False})
    prediction, _ = decode(program=program, draft=LONG_CHINESE_DRAFT, **chinese())
    trace = prediction.trace
    fixed = trace.fact("f3.0")
    assert fixed.status == "corrected" and fixed.correction == "她死于1934年。"
    assert len(fixed.correction) < SHORT_SENTENCE_CHARS <= text_size(fixed.correction)
    assert not trace.sentences[3].kept_verbatim and trace.sentences[3].rewritten == "她死于1934年。"
    assert "1934" in prediction.answer and "1943" not in prediction.answer
    assert not any("too short" in e.message for e in trace.events)


def _trace_and_answer_agree(trace, answer):
    for sentence in trace.sentences:  # a sentence kept as it was carries no applied change
        if sentence.kept_verbatim:
            assert all(f.status not in ("corrected", "pruned") for f in trace.facts
                       if f.sentence == sentence.index), sentence.text
    for fact in trace.facts:
        if fact.status == "corrected":
            assert fact.correction and any(w in answer for w in fact.correction.split()[-2:])


def test_a_discarded_rewrite_makes_its_corrections_in_place_and_the_trace_agrees():
    prediction, _ = decode(RewriteSentence=lambda i: {"sentence": ""})
    trace = prediction.trace
    assert trace.sentences[0].rewritten == "Marie Curie was born in Warsaw in 1867."
    assert "Kraków" not in prediction.answer and trace.fact("f0.0").status == "corrected"
    assert "was empty or too short" in trace.ruled("rewrite.too_short", "s0")[0].detail
    assert trace.ruled("rewrite.in_place", "s0")
    _trace_and_answer_agree(trace, prediction.answer)


def test_a_failed_rewrite_also_falls_back_and_the_trace_agrees():
    def down(inputs):
        raise ConnectionError("rewriter unreachable")

    prediction, _ = decode(RewriteSentence=down)
    trace = prediction.trace
    assert any(e.kind == "error" and e.phase == "reconstruct" for e in trace.events)
    _trace_and_answer_agree(trace, prediction.answer)


# -- 11. sentence splitting is quadratic and unbounded ---------------------------------------
PROSE = (
    "Marie Curie was born in Warsaw on 7 November 1867. Her father, Władysław Skłodowski, "
    "taught mathematics and physics. In 1891 she moved to Paris, where she studied at the "
    "Sorbonne! Was the work dangerous? Dr. Henri Becquerel had found that uranium salts "
    "emitted rays (about 3.5 times weaker than later samples, e.g. from pitchblende). "
    "She married Pierre Curie in 1895; together they isolated polonium and radium. "
    "\"It was like a dream,\" she said. The couple shared the 1903 Nobel Prize in Physics "
    "with Becquerel. After Pierre died in 1906, Mrs. Curie took over his chair at the St. "
    "Louis-era lecture hall of the Faculty of Sciences. She won a second Nobel Prize, in "
    "Chemistry, in 1911. During the war she ran mobile X-ray units, the \"petites Curies\". "
    "She died on 4 July 1934 at the Sancellemoz sanatorium in Passy, Haute-Savoie. "
)


def _cpu_seconds(text: str, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        split_sentences(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("separator", ["\n\n", ""], ids=["paragraphs", "one-paragraph"])
def test_splitting_grows_linearly_with_the_text(separator):
    unit = PROSE + separator

    def of_size(n: int) -> str:
        return unit * (n // len(unit))

    small, large = of_size(100_000), of_size(1_000_000)
    ratio = _cpu_seconds(large) / _cpu_seconds(small, repeat=3)
    assert ratio < 15, f"1 MB took {ratio:.1f}x the time of 100 kB (linear is 10x)"


def test_block_splitting_gives_the_sentences_of_an_unbounded_split():
    text = PROSE * 40  # ~32 kB in one paragraph: cut into blocks before pysbd
    whole = [s.strip() for s in text_module._segmenter().segment(" ".join(text.split()))
             if s.strip()]
    assert split_sentences(text) == whole


def _record_segmenter(monkeypatch) -> list[str]:
    """Every text pysbd is asked to split, and the split still done."""
    real, seen = text_module._segmenter, []

    class Recorder:
        def segment(self, text):
            seen.append(text)
            return real().segment(text)

    monkeypatch.setattr(text_module, "_segmenter", Recorder)
    return seen


def test_a_deadline_passed_before_splitting_means_no_splitting(monkeypatch, capsys, tmp_path):
    def slow_entity(inputs):
        time.sleep(1.3)
        return {"name": "Marie Curie", "characteristic": "physicist"}

    seen = _record_segmenter(monkeypatch)
    program = SERC(retriever=CountingRetriever(), deadline_s=0.3)
    prediction, engine = decode(program=program, AnswerEntity=slow_entity)
    trace = prediction.trace
    assert seen == [] and engine.of("AtomicFacts") == []
    assert trace.status == "failed" and "deadline" in trace.failure
    assert "before the answer was split" in trace.failure
    assert any(e.kind == "error" and "deadline" in e.message for e in trace.events)
    assert prediction.answer == DRAFT  # the input, and the status says it is no correction

    with pytest.raises(DecodingFailed, match="deadline"):
        decode(program=SERC(retriever=CountingRetriever(), deadline_s=0.3, on_error="raise"),
               AnswerEntity=slow_entity)

    lm, _ = scripted_lm(handlers(AnswerEntity=slow_entity))
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    draft = tmp_path / "d.txt"
    draft.write_text(DRAFT)
    capsys.readouterr()
    code = main(["correct", "--question", QUESTION, "--draft", str(draft), "--corpus",
                 str(EXAMPLES / "corpus"), "--deadline", "1", "--quiet"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == "" and "deadline" in captured.err
    assert seen == []


def test_the_deadline_is_checked_between_blocks():
    text = PROSE * 40
    with pytest.raises(TimeoutError):
        split_sentences(text, deadline=time.monotonic() - 1)
    assert split_sentences(text, deadline=time.monotonic() + 600) == split_sentences(text)


def test_an_oversized_draft_is_refused_before_any_splitting(monkeypatch, capsys, tmp_path):
    seen = _record_segmenter(monkeypatch)
    huge = "Marie Curie was born in Warsaw. " * (MAX_INPUT_CHARS // 32 + 1)
    assert len(huge) > MAX_INPUT_CHARS
    with pytest.raises(InputError, match="characters"):
        decode(draft=huge)
    draft = tmp_path / "huge.txt"
    draft.write_text(huge)
    lm, engine = scripted_lm(handlers())
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    code = main(["correct", "--question", QUESTION, "--draft", str(draft), "--corpus",
                 str(EXAMPLES / "corpus"), "--quiet"])
    captured = capsys.readouterr()
    assert code == 2 and "draft is" in captured.err and captured.out == ""
    assert seen == [] and engine.calls == []


# -- 17. large drafts look fully checked -----------------------------------------------------
MORE = ("She was the first woman to win a Nobel Prize. She married Pierre Curie in 1895. "
        "She discovered polonium and radium. She died in 1934 in France.")
LONG_DRAFT = DRAFT + " " + MORE  # 8 sentences


def test_sentences_past_max_sentences_count_as_unverified(caplog):
    with caplog.at_level(logging.WARNING, logger="serc_dspy"):
        prediction, engine = decode(program=SERC(retriever=CountingRetriever(),
                                                 max_sentences=3), draft=LONG_DRAFT)
    trace = prediction.trace
    assert len(trace.sentences) == 8 and len(engine.of("AtomicFacts")) == 3
    assert trace.bounded and trace.unchecked_sentences == 5
    assert trace.syndrome.unchecked_sentences == 5
    assert "+ 5 unchecked sentences" in trace.syndrome.summary()
    assert trace.bound_warning() == ("only the first 3 of 8 sentences were checked; "
                                     "5 are unverified")
    assert any("max_sentences" in e.message and e.kind == "fallback" for e in trace.events)
    assert "only the first 3 of 8" in caplog.text
    for sentence in trace.sentences[3:]:  # kept verbatim, in the answer
        assert sentence.kept_verbatim and sentence.text in prediction.answer
    assert Trace.from_json(trace.to_json()) == trace
    old = trace.model_dump(mode="json")
    del old["bounded"], old["unchecked_sentences"]  # a trace saved before these fields
    assert not Trace.model_validate(old).bounded


def test_an_unbounded_run_says_nothing_about_bounds(caplog):
    with caplog.at_level(logging.WARNING, logger="serc_dspy"):
        prediction, _ = decode(draft=LONG_DRAFT)
    trace = prediction.trace
    assert not trace.bounded and trace.unchecked_sentences == 0
    assert trace.bound_warning() is None and "unchecked" not in trace.syndrome.summary()
    assert "sentences were checked" not in caplog.text


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
def test_the_cli_warns_that_a_bounded_draft_was_not_fully_checked(json_output, monkeypatch,
                                                                  capsys, tmp_path):
    import serc_dspy.programs as programs

    build = programs.build_method
    monkeypatch.setattr(programs, "build_method",
                        lambda *a, **k: build(*a, **{**k, "max_sentences": 3}))
    lm, _ = scripted_lm(handlers())
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    draft = tmp_path / "d.txt"
    draft.write_text(LONG_DRAFT)
    code = main(["correct", "--question", QUESTION, "--draft", str(draft), "--corpus",
                 str(EXAMPLES / "corpus"), *(["--json"] if json_output else [])])
    captured = capsys.readouterr()
    assert code == 0
    assert ("[serc warning] only the first 3 of 8 sentences were checked; 5 are unverified"
            in captured.err)
    if json_output:
        import json

        trace = json.loads(captured.out)["trace"]
        assert trace["bounded"] and trace["unchecked_sentences"] == 5
    else:
        assert "She died in 1934 in France." in captured.out
        assert "+ 5 unchecked sentences]" in captured.err
