"""The chaos suite, round 2 (text layer): non-English drafts against English-only rules, the
cost of sentence splitting, and drafts longer than `max_sentences`. Each test pins one defect
and asserts what stays in the answer, the status and event in the trace, and the exit code.
Scripted LMs only; no timing is bounded in absolute terms (speed figures live in
`benchmarks/split_speed.py`)."""

from __future__ import annotations

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

import serc_dspy.text as text_module  # noqa: E402
from serc_dspy import SERC  # noqa: E402
from serc_dspy.cli import main  # noqa: E402
from serc_dspy.errors import DecodingFailed  # noqa: E402
from serc_dspy.programs.base import MAX_INPUT_CHARS, InputError  # noqa: E402
from serc_dspy.text import split_sentences  # noqa: E402


def decode(program=None, draft=DRAFT, **overrides):
    lm, engine = scripted_lm(handlers(**overrides))
    program = program or SERC(retriever=CountingRetriever())
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = program(question=QUESTION, draft=draft)
    return prediction, engine


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
    monkeypatch.setattr("serc_dspy.backends.lm_from_spec", lambda *a, **k: lm)
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
    monkeypatch.setattr("serc_dspy.backends.lm_from_spec", lambda *a, **k: lm)
    code = main(["correct", "--question", QUESTION, "--draft", str(draft), "--corpus",
                 str(EXAMPLES / "corpus"), "--quiet"])
    captured = capsys.readouterr()
    assert code == 2 and "draft is" in captured.err and captured.out == ""
    assert seen == [] and engine.calls == []
