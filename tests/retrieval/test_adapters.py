"""DSPy-shaped retriever outputs and one-argument callables are adapted, never mangled."""

import dspy
import pytest

from serc_dspy.errors import UserError
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
    from serc_dspy.retrieval.base import passage_window
    from serc_dspy.trace import Passage

    passage = Passage(text="Curie was born in Warsaw. She studied in Paris. She won the Nobel "
                           "Prize in 1903. She died in 1934. Her daughter was Irene.",
                      source="wiki/Curie")
    cut = passage_window(passage, "Curie won the Nobel Prize in Physics in 1903", 3)
    assert cut.source == "wiki/Curie"
    assert cut.text == "She studied in Paris. She won the Nobel Prize in 1903. She died in 1934."
    assert passage_window(passage, "nothing shared", 2).text.startswith("Curie was born")
    assert passage_window(passage, "anything", 9) is passage  # short enough already
