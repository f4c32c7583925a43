"""`--lm` / `--stage-lm` strings -> DSPy LMs, and their errors."""

import json

import pytest

from serc_dspy.backends import BackendError, lm_from_spec


def test_named_offline_models_and_local_paths():
    lm = lm_from_spec("smollm2", max_tokens=64)
    assert lm.model == "local/smollm2" and lm.kwargs["max_tokens"] == 64
    assert lm_from_spec("local=smollm2").model == "local/smollm2"
    gguf = lm.engine.model_path
    by_path = lm_from_spec(f"local={gguf}")
    assert by_path.model == f"local/{gguf.stem}" and by_path.engine.model_path == gguf


def test_the_default_is_qwen_with_its_cpu_defaults():
    from serc_dspy.backends.spec import PAPER_DEFAULTS, run_defaults

    lm = lm_from_spec(None)
    assert lm.model == "local/qwen1.5b" and lm.kwargs["max_tokens"] == 512
    assert lm_from_spec("local").model == "local/qwen1.5b"
    assert run_defaults(None) == {"max_tokens": 512, "top_k": 3, "context_chars": 2400,
                                  "workers": 4, "queries": "facts", "evidence": "passages",
                                  "verdicts": "choose", "reconstruct": "minimal",
                                  "serial_stages": ("decompose", "correct")}
    assert run_defaults("openai/gpt-4o-mini") == PAPER_DEFAULTS


def test_sglang_and_openai_compatible_servers(monkeypatch):
    monkeypatch.delenv("SERC_LM_API_KEY", raising=False)
    lm = lm_from_spec("sglang=http://127.0.0.1:30000/v1#meta-llama/Meta-Llama-3-8B-Instruct")
    assert lm.model == "sglang/meta-llama/Meta-Llama-3-8B-Instruct"
    assert lm.engine.url == "http://127.0.0.1:30000/v1"
    assert lm.engine.request_model == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert lm.engine.supports_response_schema
    vllm = lm_from_spec("openai=http://127.0.0.1:8000/v1#Qwen/Qwen2.5-14B-Instruct")
    assert vllm.model == "openai/Qwen/Qwen2.5-14B-Instruct"
    assert "api_key" not in json.dumps(vllm.engine.dump_state())


def test_provider_model_is_passed_to_dspy():
    assert lm_from_spec("openai/gpt-4o-mini").model == "openai/gpt-4o-mini"


@pytest.mark.parametrize("spec", ["local=", "gpt", "sglang=http://x/v1", "sglang=#m", "hf=",
                                  "weird=thing", "/abs/path.gguf"])
def test_bad_specs_list_the_accepted_forms(spec):
    with pytest.raises(BackendError, match="accepted forms") as info:
        lm_from_spec(spec)
    assert "sglang=URL#MODEL" in str(info.value)


def test_server_url_must_be_http():
    with pytest.raises(BackendError, match="http://"):
        lm_from_spec("sglang=localhost:30000#m")
