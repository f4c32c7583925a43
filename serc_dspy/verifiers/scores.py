"""Labels and scores: pure functions on a model's config and on its logits.

Which label index means "entailed", "contradicted" or "supported" is read from the config's
`id2label` by name; the scores are then probabilities per row of a batch. Kept apart from the
model code so each rule can be tested on plain tensors, without a model.
"""

from __future__ import annotations

import re
from typing import Any

from serc_dspy.core.errors import UserError


def _normalise(label: Any) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(label).strip().lower()).strip("_")


def read_id2label(config) -> dict[int, str]:
    raw = getattr(config, "id2label", None) or {}
    return {int(k): str(v) for k, v in raw.items()}


def nli_label_indices(id2label: dict[int, str]) -> tuple[int, int] | None:
    """(entailment index, contradiction index) from a model's labels, matched
    case-insensitively ("ENTAILMENT", "entailed", "Contradiction", ...); None when the labels
    are not NLI labels. "not_entailment" is not entailment."""
    entail = [i for i, name in id2label.items() if _normalise(name).startswith("entail")]
    contra = [i for i, name in id2label.items() if _normalise(name).startswith("contradict")]
    if len(entail) == 1 and len(contra) == 1:
        return entail[0], contra[0]
    return None


_SUPPORT_NAMES = frozenset({
    "supported", "support", "supports", "entailment", "entailed", "entails", "consistent",
    "factual", "faithful", "grounded", "true", "yes", "correct", "attributable",
})


def binary_support_index(id2label: dict[int, str], support_label: int | str | None = None,
                         *, model: str = "the model") -> int:
    """Index of the label that means "supported" in a 1- or 2-label classifier: `support_label`
    (an index or a label name, case-insensitive) when given, else the one label whose name
    says so ("supported", "entailment", "consistent", ...). A single-logit model is index 0."""
    labels = ", ".join(f"{i}: {name!r}" for i, name in sorted(id2label.items()))
    if support_label is not None:
        if isinstance(support_label, int) and not isinstance(support_label, bool):
            if support_label in id2label:
                return support_label
        else:
            wanted = _normalise(support_label)
            found = [i for i, name in id2label.items() if _normalise(name) == wanted]
            if len(found) == 1:
                return found[0]
        raise UserError(f"support_label {support_label!r} is not one of {model}'s labels "
                        f"({labels})")
    if len(id2label) == 1:
        return next(iter(id2label))
    found = [i for i, name in id2label.items() if _normalise(name) in _SUPPORT_NAMES]
    if len(found) == 1:
        return found[0]
    raise UserError(
        f"cannot tell which of {model}'s labels ({labels}) means 'supported': pass "
        "support_label (an index or a label name; MiniCheck and HHEM use 1), or kind='nli' "
        "for a model with entailment/neutral/contradiction labels")


def nli_scores(logits, entailment: int, contradiction: int):
    """(support, contradiction) probabilities per row of an NLI classifier's logits."""
    probs = logits.float().softmax(dim=-1)
    return probs[:, entailment], probs[:, contradiction]


def binary_scores(logits, support: int):
    """(support, zeros) per row: softmax over the labels, or sigmoid of a single logit."""
    import torch

    logits = logits.float()
    if logits.shape[-1] == 1:
        probs = logits[:, 0].sigmoid()
    else:
        probs = logits.softmax(dim=-1)[:, support]
    return probs, torch.zeros_like(probs)


def seq2seq_scores(first_step_logits, positive_id: int, negative_id: int):
    """(support, zeros) per row from the first decoder step's vocabulary logits: softmax over
    the two label tokens' logits, the positive one's probability."""
    import torch

    pair = first_step_logits.float()[:, [negative_id, positive_id]]
    probs = pair.softmax(dim=-1)[:, 1]
    return probs, torch.zeros_like(probs)


def label_token_id(tokenizer, text: str) -> int:
    """The first token a seq2seq model writes for `text` (for T5, "1" is one token, "▁1",
    while "0" starts with a lone "▁": that is the token MiniCheck-Flan-T5 compares)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if not ids:
        raise UserError(f"the tokenizer turns the label {text!r} into no tokens")
    return int(ids[0])
