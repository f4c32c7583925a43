"""`--lm` / `--stage-lm` strings -> DSPy LMs, and their errors."""

import pytest

from serc_dspy.backends import BackendError, lm_from_spec
from serc_dspy.backends.spec import parse_stage_lms


def test_local_is_the_embedded_model():
    lm = lm_from_spec("local", max_tokens=64)
    assert lm.model == "local/SmolLM2-135M-Instruct.Q4_1"
    assert lm.kwargs["max_tokens"] == 64


def test_sglang_and_openai_compatible_servers(monkeypatch):
    monkeypatch.delenv("SERC_LM_API_KEY", raising=False)
    lm = lm_from_spec("sglang=http://127.0.0.1:30000/v1#meta-llama/Meta-Llama-3-8B-Instruct")
    assert lm.model == "serc_sglang/meta-llama/Meta-Llama-3-8B-Instruct"
    assert lm.kwargs.get("api_base", getattr(lm, "api_base", None)) in (
        "http://127.0.0.1:30000/v1", None)
    assert lm.supports_response_schema
    vllm = lm_from_spec("openai=http://127.0.0.1:8000/v1#Qwen/Qwen2.5-14B-Instruct")
    assert vllm.model == "serc_openai/Qwen/Qwen2.5-14B-Instruct"
    assert vllm.supports_response_schema


def test_provider_model_is_passed_to_dspy():
    assert lm_from_spec("openai/gpt-4o-mini").model == "openai/gpt-4o-mini"


@pytest.mark.parametrize("spec", ["", "gpt", "sglang=http://x/v1", "sglang=#m", "hf=",
                                  "weird=thing", "/abs/path.gguf"])
def test_bad_specs_list_the_accepted_forms(spec):
    with pytest.raises(BackendError, match="accepted forms") as info:
        lm_from_spec(spec)
    assert "sglang=URL#MODEL" in str(info.value)


def test_server_url_must_be_http():
    with pytest.raises(BackendError, match="http://"):
        lm_from_spec("sglang=localhost:30000#m")


def test_stage_lms():
    lms = parse_stage_lms(["verify=openai/gpt-4o", "polish=local"])
    assert lms["verify"].model == "openai/gpt-4o" and set(lms) == {"verify", "polish"}
    with pytest.raises(BackendError, match="STAGE=SPEC"):
        parse_stage_lms(["verify"])
