"""`StrictJSONAdapter`: DSPy's JSON adapter without the repair of broken replies.

`dspy.JSONAdapter` reads a reply with `json_repair`, which turns a reply cut off mid-string
into a plausible object: `{"answer": "...She was a devot` becomes an answer, and a fact cut to
"Marie Curie won the No" becomes a fact that is then judged. For a decoder that is a forged
verdict. This adapter accepts only a complete JSON object that carries every output field the
signature requires; anything else raises `AdapterParseError`, which the step layer retries once
and then degrades like any failed call (see `steps.Run.call`). A reply wrapped in one Markdown
code fence (```json ... ```), as unconstrained models write it, is unwrapped first; what is
inside must still be complete.
"""

from __future__ import annotations

import json
import re
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

_FENCE = re.compile(r"^```(?:json)?\s*\n?(?P<body>.*?)\n?```$", re.S)


def strict_json_object(completion: str) -> dict[str, Any] | None:
    """The reply as a JSON object, or None when it is not one complete object."""
    text = (completion or "").strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced["body"].strip()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def required_outputs(signature: type[dspy.Signature]) -> list[str]:
    """Output fields without a default: a reply must state each of them."""
    return [name for name, field in signature.output_fields.items()
            if field.is_required()]


class StrictJSONAdapter(dspy.JSONAdapter):
    """A `dspy.JSONAdapter` that refuses incomplete or repaired JSON (module docs)."""

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        fields = strict_json_object(completion)
        if fields is None:
            raise AdapterParseError(
                adapter_name=type(self).__name__, signature=signature, lm_response=completion,
                message="the reply is not one complete JSON object (cut off or malformed); "
                        "it is not repaired")
        missing = [name for name in required_outputs(signature) if name not in fields]
        if missing:
            raise AdapterParseError(
                adapter_name=type(self).__name__, signature=signature, lm_response=completion,
                message=f"the reply lacks the output field(s) {', '.join(missing)}",
                parsed_result=fields)
        return super().parse(signature, json.dumps(fields))
