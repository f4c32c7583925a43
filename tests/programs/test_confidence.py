"""`programs.serc.confidence`: the option letters' probabilities, read from a reply's
log-probabilities, averaged over option orders, and the lead that decides."""

import math

import dspy

from serc_dspy.core.trace import Candidate
from serc_dspy.programs.serc.confidence import (
    letter_probabilities,
    pooled,
    pooled_leader,
    value_probabilities,
)


def _reply(letter_logprobs: dict[str, float], chosen: str = "B"):
    """A reply as DSPy hands it over: the tokens of '{"choice": "B"}' with their
    alternatives (a free-text alternative such as "Paris" among them, as a server reports the
    distribution before the grammar)."""
    top = [{"token": k, "logprob": v} for k, v in letter_logprobs.items()]
    content = [{"token": '{"', "logprob": -0.1, "top_logprobs": []},
               {"token": "choice", "logprob": -0.1, "top_logprobs": []},
               {"token": '": "', "logprob": -0.1,
                "top_logprobs": [{"token": "A", "logprob": -9.0}]},
               {"token": chosen, "logprob": letter_logprobs.get(chosen, -5.0),
                "top_logprobs": top + [{"token": "Paris", "logprob": -0.5}]},
               {"token": '"}', "logprob": -0.1, "top_logprobs": []}]
    return dspy.Prediction(choice=chosen, logprobs={"content": content})


def test_the_letter_token_gives_each_letters_probability_over_the_letters_alone():
    got = letter_probabilities(_reply({"A": math.log(0.2), "B": math.log(0.6)}), "ABC")
    # "Paris" (outside the grammar) and the "A" before the field's value are not counted
    assert set(got) == {"A", "B"} and abs(got["B"] - 0.75) < 1e-9 and abs(got["A"] - 0.25) < 1e-9
    assert letter_probabilities(_reply({"D": -0.1}, chosen="B"), "ABC") == {"B": 1.0}
    # a token of two letters ("AB") is no option letter
    assert letter_probabilities(_reply({"AB": -0.1}, chosen="B"), "ABC") == {"B": 1.0}
    # a backend or a scripted LM with no log-probabilities, or a failed call: nothing
    assert letter_probabilities(dspy.Prediction(choice="B"), "ABC") == {}
    assert letter_probabilities(None, "ABC") == {}


def test_values_are_averaged_over_orders_and_only_a_clear_lead_decides():
    a, b, none = (Candidate(value=v, origin=o) for v, o in
                  (("1867", "fact"), ("1868", "evidence"), ("not stated", "none")))
    first = value_probabilities([a, b, none], {"A": 0.7, "B": 0.3}, "ABCDEF")
    second = value_probabilities([b, a, none], {"A": 0.9, "B": 0.1}, "ABCDEF")
    assert first == {"1867": 0.7, "1868": 0.3, "not stated": 0.0}
    both = pooled([first, second])
    assert both == {"1867": 0.4, "1868": 0.6, "not stated": 0.0}
    assert pooled_leader(both, margin=0.15) == "1868"
    assert pooled_leader(both, margin=0.25) is None
    # one order without probabilities: no pooled figure at all
    assert pooled([first, value_probabilities([b, a, none], {}, "ABCDEF")]) == {}
    assert pooled_leader({}) is None
