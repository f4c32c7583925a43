"""The one OpenAI chat-completions request every backend sends, and how its reply is read.

DSPy 3.4 hands an engine one canonical `lm15.Request`. `chat_request` turns it into the body of
an OpenAI `/v1/chat/completions` call: messages, `max_tokens` (not the `max_completion_tokens`
some servers ignore), temperature, stop words and, for typed outputs, `response_format` of type
`json_schema` with the signature's schema (arrays bounded, so a small model cannot loop on list
items until it runs out of tokens) and, when asked, the tokens' log-probabilities.
`chat_response` reads the answer back (with those log-probabilities), and refuses a
truncated one (`finish_reason == "length"`): cut-off JSON "repaired" by a parser would silently
lose the rest of a rewrite or a polish.

Pure functions on dicts, apart from any transport: the engines in `chat.py` (in-process
llama.cpp, HTTP servers) and `hf.py` (transformers) all speak this one format, so a rule about
what a complete reply is holds for every backend.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from dspy import lm15
from dspy._vendor.lm15.providers.common import openai_token_logprobs
from dspy._vendor.lm15.types import StreamDeltaEvent, TextDelta
from dspy.lm15 import Message, Response, TextPart, Usage, response_to_events
from dspy.utils.exceptions import LMAuthError

from serc_dspy.core.errors import KeyRejected, MalformedOutput, StepFailed, redact
from serc_dspy.runtime.adapter import strict_json_object

DEFAULT_MAX_TOKENS = 512
# A small model under a schema can repeat list items until it runs out of tokens; a bound on
# list length keeps every answer short enough to close its JSON.
DEFAULT_MAX_LIST_ITEMS = 12
# Seconds per server call: ample for a GPU server, short enough to give up on a hung one.
API_KEY_ENV = "SERC_LM_API_KEY"


class LMKeyRejected(KeyRejected, LMAuthError):
    """The server rejected the API key (HTTP 401 or 403): a configuration error that aborts a
    run (CLI exit 2), with its message redacted. Also a DSPy `LMAuthError`, which DSPy passes
    through unchanged."""

    def __init__(self, message: str, *, status: int | None = None):
        LMAuthError.__init__(self, redact(message), status=status)


class OutputTruncated(StepFailed):
    """The model hit `max_tokens` before finishing: the output is incomplete and is not used."""


class OutputMalformed(MalformedOutput):
    """A reply asked to follow a JSON schema is not one complete JSON object with the schema's
    required fields, whatever its finish reason said: a fragment is never repaired into an
    answer."""


def requested_schema(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """The JSON schema a request asks its output to follow, or None for free text.

    DSPy sends `{"type": "json_schema", "schema": ...}` (or OpenAI's nested `json_schema`);
    plain JSON mode becomes the schema of any object.
    """
    if not response_format or response_format.get("type") == "text":
        return None
    schema = response_format.get("schema")
    if schema is None and isinstance(response_format.get("json_schema"), dict):
        schema = response_format["json_schema"].get("schema")
    return schema if schema is not None else {"type": "object"}


def bound_lists(schema: dict[str, Any], max_items: int, min_items: int = 0) -> dict[str, Any]:
    """Return a copy of a JSON schema whose unbounded arrays get `maxItems` (and `minItems`)."""
    schema = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "array" and "maxItems" not in node:
                node["maxItems"] = max_items
            if node.get("type") == "array" and min_items and "minItems" not in node:
                node["minItems"] = min_items
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema


# Characters per token a string may use of the output budget (English runs at about 4).
CHARS_PER_TOKEN = 2


def bound_strings(schema: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """Give the schema's top-level free-text fields a `maxLength` that shares the token budget.

    A small model fills an unbounded string until `max_tokens` (SmolLM2 does on most calls), so
    the JSON never closes and the call is lost. With the bound the grammar closes the string in
    time; a string that reaches its bound counts as cut off (see `ChatEngine.complete`).
    """
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    free = [name for name, sub in properties.items() if isinstance(sub, dict)
            and sub.get("type") == "string" and "enum" not in sub and "maxLength" not in sub]
    if not free:
        return schema
    schema = copy.deepcopy(schema)
    limit = max(64, CHARS_PER_TOKEN * max_tokens // len(free))
    for name in free:
        schema["properties"][name]["maxLength"] = limit
    return schema


def chat_messages(request) -> list[dict[str, str]]:
    """The request's system prompt and turns as OpenAI chat messages."""
    messages = []
    if request.system is not None:
        system = request.system
        if not isinstance(system, str):
            system = "".join(getattr(part, "text", "") or "" for part in system)
        messages.append({"role": "system", "content": system})
    messages.extend({"role": m.role, "content": m.text or ""} for m in request.messages)
    return messages


def chat_request(request, *, model: str | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
                 max_list_items: int = DEFAULT_MAX_LIST_ITEMS) -> dict[str, Any]:
    """The OpenAI chat-completions body for one DSPy request (the only place it is built)."""
    config = request.config
    body: dict[str, Any] = {
        "messages": chat_messages(request),
        "max_tokens": int(config.max_tokens or max_tokens),
        "temperature": 0.0 if config.temperature is None else float(config.temperature),
    }
    if model is not None:
        body["model"] = model
    if config.stop:
        body["stop"] = list(config.stop)
    if config.seed is not None:
        body["seed"] = int(config.seed)
    if config.logprobs is not None:
        # the chosen tokens' log-probabilities, with `config.logprobs` alternatives each
        body["logprobs"] = True
        body["top_logprobs"] = int(config.logprobs)
    schema = requested_schema(config.response_format)
    if schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "output", "strict": True,
                            "schema": bound_strings(bound_lists(schema, max_list_items),
                                                    body["max_tokens"])},
        }
    return body


def chat_response(payload: dict[str, Any], model: str) -> Response:
    """An OpenAI chat-completions reply as a DSPy response; a truncated reply raises."""
    if "error" in payload:
        error = payload["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        status = _status(error)
        if status in (401, 403):
            raise LMKeyRejected(f"{model}: the server rejected the API key (HTTP {status}): "
                                f"{message}; check {API_KEY_ENV}", status=status)
        raise lm15.ServerError(redact(f"{model}: {message}"), status=status)
    try:
        choice = payload["choices"][0]
        content = choice["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise lm15.ServerError(f"{model}: malformed chat completion ({exc})") from exc
    usage = payload.get("usage") or {}
    if choice.get("finish_reason") == "length":
        raise OutputTruncated(
            f"{model} stopped at max_tokens after {usage.get('completion_tokens', '?')} tokens; "
            "the incomplete output was discarded")
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    logprobs = (choice.get("logprobs") or {}).get("content") \
        if isinstance(choice.get("logprobs"), dict) else None
    return Response(
        id=payload.get("id"),
        model=model,
        message=Message.assistant([TextPart(content)]),
        finish_reason="stop",
        usage=Usage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            total_tokens=int(usage.get("total_tokens") or 0),
            cache_read_tokens=int(cached) if cached is not None else None,
        ),
        logprobs=openai_token_logprobs(logprobs) or None,
    )


def refuse_incomplete_json(body: dict[str, Any], content: str, model: str) -> None:
    """A schema-bound reply must be one complete JSON object holding the schema's required
    fields; `finish_reason == "stop"` alone does not make a cut-off reply complete."""

    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
    if not schema:
        return
    value = strict_json_object(content)
    if value is None:
        raise OutputMalformed(f"{model}: the reply is not one complete JSON object "
                              f"({len(content)} characters, ends {content[-40:]!r}); "
                              "it was discarded, not repaired")
    missing = [name for name in schema.get("required") or [] if name not in value]
    if missing:
        raise OutputMalformed(f"{model}: the reply lacks the required field(s) "
                              f"{', '.join(missing)}; it was discarded")


def refuse_strings_at_their_bound(body: dict[str, Any], content: str, model: str) -> None:
    """A free-text field that filled its whole `maxLength` was cut by the grammar, not
    finished by the model: as loud as a reply cut at `max_tokens`."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    limits = {name: sub["maxLength"] for name, sub in (schema.get("properties") or {}).items()
              if isinstance(sub, dict) and "maxLength" in sub}
    if not limits:
        return
    try:
        values = json.loads(content)
    except ValueError:
        return  # the adapter reports unparseable output itself
    for name, limit in limits.items():
        value = values.get(name) if isinstance(values, dict) else None
        if isinstance(value, str) and len(value) >= limit:
            raise OutputTruncated(f"{model}: field {name!r} reached its {limit}-character bound "
                                  "(the output budget); the incomplete output was discarded")


def _status(error: Any) -> int | None:
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) else None


_PIECE = re.compile(r"\S+\s*|\s+")


def stream_events(response: Response):
    """A finished response as stream events, its text cut into word-sized deltas.

    DSPy's stream listeners find a field's start and end markers across chunks; a whole reply
    in one delta never shows them as separate chunks, and no field would ever be streamed.
    """
    for event in response_to_events(response):
        delta = getattr(event, "delta", None)
        if not isinstance(delta, TextDelta) or not delta.text:
            yield event
            continue
        for number, piece in enumerate(_PIECE.findall(delta.text)):
            yield StreamDeltaEvent(delta=TextDelta(
                text=piece, part_index=delta.part_index,
                logprobs=delta.logprobs if number == 0 else (),
                logprobs_complete=delta.logprobs_complete))
