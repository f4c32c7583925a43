"""The embedded llama.cpp engine: model discovery, schema bounds, and honoured settings."""

import json

import dspy
import pytest

from serc_dspy.backends import BackendError, LlamaCppEngine, embedded_lm, find_smollm2_gguf
from serc_dspy.backends.embedded import bound_lists
from serc_dspy.signatures import AtomicFacts


def test_bound_lists_adds_max_items_only_where_missing():
    schema = {"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "string"}},
        "b": {"type": "array", "maxItems": 3},
        "c": {"type": "object", "properties": {"d": {"type": "array"}}}}}
    bounded = bound_lists(schema, 7)
    assert bounded["properties"]["a"]["maxItems"] == 7
    assert bounded["properties"]["b"]["maxItems"] == 3
    assert bounded["properties"]["c"]["properties"]["d"]["maxItems"] == 7
    assert "maxItems" not in schema["properties"]["a"]  # the input is not mutated


def test_missing_gguf_path_is_a_clear_error(tmp_path):
    with pytest.raises(BackendError, match="GGUF model file not found"):
        LlamaCppEngine(tmp_path / "nope.gguf")


def test_smollm2_is_found_inside_its_wheel():
    path = find_smollm2_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000


@pytest.mark.embedded
def test_max_tokens_limits_the_completion_and_schema_constrains_it():
    lm = embedded_lm(max_tokens=12)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter(), track_usage=True):
        prediction = dspy.Predict(AtomicFacts)(subject="Marie Curie",
                                               sentence="Marie Curie was born in Warsaw.")
    usage = prediction.get_lm_usage()[lm.model]
    assert 0 < usage["completion_tokens"] <= 12
    assert isinstance(prediction.facts, list)


@pytest.mark.embedded
def test_temperature_zero_is_deterministic_and_state_round_trips():
    lm = embedded_lm(max_tokens=40)
    engine = lm.engine
    texts = []
    for _ in range(2):
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            texts.append(dspy.Predict(AtomicFacts)(
                subject="Marie Curie", sentence="Marie Curie won two Nobel Prizes.").facts)
    assert texts[0] == texts[1]
    state = engine.dump_state()
    assert json.loads(json.dumps(state))["model_path"] == str(engine.model_path)
    assert LlamaCppEngine.load_state(state).model_path == engine.model_path
