"""DSPy-shaped retriever outputs and one-argument callables are adapted, never mangled."""

import dspy
import pytest

from serc_dspy.core.errors import UserError
from serc_dspy.retrieval.base import as_retriever


def test_a_dspy_prediction_of_passages_is_unwrapped():
    retriever = as_retriever(lambda q, k: dspy.Prediction(passages=["one text", "two text"]))
    assert [p.text for p in retriever("q", 5)] == ["one text", "two text"]


def test_long_text_dicts_and_query_only_callables_are_accepted():
    retriever = as_retriever(lambda q: [{"long_text": f"about {q}", "source": "s"}] * 4)
    passages = retriever("Curie", 2)
    assert [p.text for p in passages] == ["about Curie"] * 2 and passages[0].source == "s"


def test_a_callable_that_takes_no_query_is_refused_at_construction():
    with pytest.raises(UserError, match="f\\(query, k\\) or f\\(query\\)"):
        as_retriever(lambda: [])


def test_a_passage_window_keeps_the_matching_sentences_and_the_source():
    from serc_dspy.core.trace import Passage
    from serc_dspy.retrieval.base import passage_window

    passage = Passage(text="Curie was born in Warsaw. She studied in Paris. She won the Nobel "
                           "Prize in 1903. She died in 1934. Her daughter was Irene.",
                      source="wiki/Curie")
    cut = passage_window(passage, "Curie won the Nobel Prize in Physics in 1903", 3)
    assert cut.source == "wiki/Curie"
    assert cut.text == "She studied in Paris. She won the Nobel Prize in 1903. She died in 1934."
    assert passage_window(passage, "nothing shared", 2).text.startswith("Curie was born")
    assert passage_window(passage, "anything", 9) is passage  # short enough already


def test_a_check_nodes_window_keeps_every_claims_match_in_order_within_its_bound():
    from serc_dspy.core.text import split_sentences
    from serc_dspy.core.trace import Passage
    from serc_dspy.retrieval.base import passage_window

    parts = ["Curie was born in Warsaw.", "Her father taught physics.",
             "Her mother ran a school.", "She moved to Paris in 1891.",
             "She studied at the Sorbonne.", "She married Pierre in 1895.",
             "She won the Nobel Prize in 1903.", "She died in 1934."]
    passage = Passage(text=" ".join(parts), source="wiki/Curie")
    claims = ["Curie won the Nobel Prize in 1903", "Curie was born in Warsaw",
              "Curie studied at the Sorbonne"]
    cut = passage_window(passage, claims, 2)
    kept = split_sentences(cut.text)
    assert cut.source == "wiki/Curie"
    for match in (parts[0], parts[4], parts[6]):  # each claim's best sentence
        assert match in kept
    assert kept == [p for p in parts if p in kept]  # the passage's own order
    assert len(kept) <= 2 * len(claims) and "mother" not in cut.text
    # a claim that matches nothing adds nothing; none matching keeps the first sentences
    assert passage_window(passage, [claims[1], "zzzz qqqq"], 2).text == " ".join(parts[:2])
    assert passage_window(passage, ["zzzz qqqq"], 3).text == " ".join(parts[:3])
