"""The embedded engine: llama.cpp's server in-process (xllamacpp) behind DSPy's engine API.

The request/response code shared with the HTTP backends is tested without a model; the engine
itself runs the real SmolLM2 (fast) on tiny prompts.
"""

import json
import threading

import dspy
import pytest
from dspy.lm15 import Config, Message, Request
from dspy.utils.exceptions import LMUnexpectedError

from serc_dspy.backends import BackendError, LlamaServerEngine, embedded_lm, find_smollm2_gguf
from serc_dspy.backends.chat import OutputTruncated, bound_lists, chat_request, chat_response
from serc_dspy.signatures import AtomicFacts, JudgeFact


def _request(**config):
    return Request(model="m", system="Be brief.", messages=(Message.user("Hello"),),
                   config=Config(**config))


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


def test_one_chat_request_carries_messages_limits_and_the_json_schema():
    schema = {"type": "object", "properties": {"facts": {"type": "array"}}}
    body = chat_request(_request(max_tokens=33, temperature=0.1, stop=("END",),
                                 response_format={"type": "json_schema", "schema": schema}),
                        model="served-name", max_list_items=5)
    assert body["model"] == "served-name"
    assert body["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Hello"}]
    assert body["max_tokens"] == 33 and body["temperature"] == 0.1 and body["stop"] == ["END"]
    sent = body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["schema"]["properties"]["facts"]["maxItems"] == 5
    assert "response_format" not in chat_request(_request())  # free text stays free


def test_a_truncated_reply_is_refused_and_an_error_reply_raises():
    cut = {"choices": [{"finish_reason": "length", "message": {"content": '{"answer": "hal'}}],
           "usage": {"completion_tokens": 8}}
    with pytest.raises(OutputTruncated, match="max_tokens"):
        chat_response(cut, "m")
    with pytest.raises(Exception, match="bad field"):
        chat_response({"error": {"code": 400, "message": "bad field"}}, "m")
    ok = chat_response({"choices": [{"finish_reason": "stop", "message": {"content": "{}"}}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 2,
                                  "prompt_tokens_details": {"cached_tokens": 4}}}, "m")
    assert ok.usage.input_tokens == 5 and ok.usage.cache_read_tokens == 4


def test_log_probabilities_are_asked_for_and_read_back():
    body = chat_request(_request(logprobs=5))
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    assert "logprobs" not in chat_request(_request())  # not asked: not sent
    token = {"token": "B", "logprob": -0.2, "bytes": [66],
             "top_logprobs": [{"token": "B", "logprob": -0.2}, {"token": "A", "logprob": -1.8}]}
    reply = chat_response({"choices": [{"finish_reason": "stop",
                                        "message": {"content": '{"choice": "B"}'},
                                        "logprobs": {"content": [token]}}]}, "m")
    assert [t.token for t in reply.logprobs] == ["B"]
    assert [(a.token, a.logprob) for a in reply.logprobs[0].top] == [("B", -0.2), ("A", -1.8)]
    plain = chat_response({"choices": [{"finish_reason": "stop", "message": {"content": "{}"}}]},
                          "m")
    assert plain.logprobs is None


def test_missing_gguf_path_is_a_clear_error(tmp_path):
    with pytest.raises(BackendError, match="GGUF model file not found"):
        LlamaServerEngine(tmp_path / "nope.gguf")


def test_smollm2_is_found_inside_its_wheel():
    path = find_smollm2_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000


class NameTheCity(dspy.Signature):
    """Copy the name of the city that the sentence mentions."""

    sentence: str = dspy.InputField()
    city: str = dspy.OutputField()


@pytest.fixture(scope="module")
def smollm2():
    return embedded_lm("smollm2", max_tokens=64)


@pytest.mark.embedded
def test_schema_constrained_outputs_parse_and_usage_is_reported(smollm2):
    with dspy.context(lm=smollm2, adapter=dspy.JSONAdapter(), track_usage=True):
        for claim in ("Curie was born in Warsaw.", "Curie was born in Paris.", "Bananas fly."):
            prediction = dspy.Predict(JudgeFact)(evidence="Curie was born in Warsaw.",
                                                 claim=claim)
            assert prediction.verdict in ("SUPPORTED", "CONTRADICTED", "NOT_FOUND")
            usage = prediction.get_lm_usage()[smollm2.model]
            assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0


@pytest.mark.embedded
def test_max_tokens_is_honoured_and_a_cut_off_output_is_an_error(smollm2):
    tiny = embedded_lm("smollm2", max_tokens=4)
    with dspy.context(lm=tiny, adapter=dspy.JSONAdapter()):
        with pytest.raises(Exception, match="max_tokens"):
            dspy.Predict(AtomicFacts)(subject="Marie Curie",
                                      sentence="Marie Curie was born in Warsaw in 1867.")


@pytest.mark.embedded
def test_temperature_zero_is_deterministic_and_temperature_reaches_the_engine(smollm2,
                                                                                monkeypatch):
    engine = smollm2.engine
    sent = []
    real_send = engine.send
    monkeypatch.setattr(engine, "send", lambda body: sent.append(body) or real_send(body))
    texts = []
    with dspy.context(lm=smollm2, adapter=dspy.JSONAdapter()):
        for temperature in (0.0, 0.0):
            texts.append(dspy.Predict(NameTheCity)(
                sentence="Anna was born in Warsaw.", config={"temperature": temperature}).city)
        try:  # a sampled reply may ramble to max_tokens: then it fails loudly, as it must
            dspy.Predict(NameTheCity)(sentence="Anna was born in Warsaw.",
                                      config={"temperature": 0.7})
        except LMUnexpectedError as exc:
            assert "max_tokens" in str(exc)
    assert texts[0] == texts[1]
    assert [b["temperature"] for b in sent] == [0.0, 0.0, 0.7]
    assert all(b["max_tokens"] == 64 for b in sent)
    state = engine.dump_state()
    assert json.loads(json.dumps(state))["model_name"] == "smollm2"
    assert LlamaServerEngine.load_state(state).model_path == engine.model_path


@pytest.mark.embedded
def test_a_grammar_bound_letter_comes_back_with_each_letters_probability(smollm2):
    from serc_dspy.programs.serc.confidence import LOGPROBS_CONFIG, letter_probabilities
    from serc_dspy.signatures import ChooseValue

    with dspy.context(lm=smollm2, adapter=dspy.JSONAdapter()):
        reply = dspy.Predict(ChooseValue)(
            evidence="Marie Curie was born in Warsaw in 1867.",
            claim="Marie Curie was born in ___.", options="A) Paris\nB) Warsaw\nC) not stated",
            config=LOGPROBS_CONFIG)
    probabilities = letter_probabilities(reply, "ABC")
    assert reply.choice in "ABC" and reply.choice in probabilities
    assert abs(sum(probabilities.values()) - 1) < 1e-6
    assert all(0 <= p <= 1 for p in probabilities.values())


@pytest.mark.embedded
def test_four_threads_calling_one_engine_each_get_their_own_answer(smollm2):
    cities = ["Warsaw", "Lisbon", "Oslo", "Cairo"]
    answers: dict[str, str] = {}

    def ask(city: str) -> None:
        with dspy.context(lm=smollm2, adapter=dspy.JSONAdapter()):
            answers[city] = dspy.Predict(NameTheCity)(sentence=f"Anna was born in {city}.").city

    threads = [threading.Thread(target=ask, args=(city,)) for city in cities]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert set(answers) == set(cities)
    # Each answer is about its own prompt: no slot handed one thread another's output.
    for city, text in answers.items():
        others = [c for c in cities if c != city]
        assert not any(other in text for other in others), (city, text)


@pytest.mark.embedded
def test_qwen_answers_one_verdict_call_that_parses():
    """The default offline model, assembled from its part wheels: one short verdict call."""
    lm = embedded_lm("qwen1.5b", max_tokens=32)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter(), track_usage=True):
        prediction = dspy.Predict(JudgeFact)(
            evidence="Marie Curie died on 4 July 1934 at a sanatorium in Passy.",
            claim="Marie Curie died in 1944.")
    assert prediction.verdict in ("SUPPORTED", "CONTRADICTED", "NOT_FOUND")
    assert prediction.get_lm_usage()["local/qwen1.5b"]["completion_tokens"] > 0
