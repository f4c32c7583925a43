"""A verifier from a `KIND=MODEL` string, the form a command-line flag takes."""

from __future__ import annotations

from typing import Any

from serc_dspy.core.errors import UserError
from serc_dspy.verifiers.classifier import (
    MINICHECK_SEQ2SEQ_TEMPLATE,
    MINICHECK_TEMPLATE,
    ClassifierVerifier,
)

SPEC_FORMS = "nli=DIR_OR_ID | minicheck=DIR_OR_ID | hhem=DIR_OR_ID | binary=DIR_OR_ID | " \
             "seq2seq=DIR_OR_ID"


def verifier_from_spec(spec: str, **options: Any) -> ClassifierVerifier:
    """A verifier from a `KIND=MODEL` string (a CLI flag's value). `options` go to
    `ClassifierVerifier` and win over the preset's.

    - `nli=...`: a 3-way NLI classifier (kind="nli").
    - `minicheck=...`: a MiniCheck model: a RoBERTa/DeBERTa classifier (label 1 = supported)
      or Flan-T5 (seq2seq); input `chunk<eos>claim` (with the "predict: " prefix for T5).
    - `hhem=...`: Vectara's HHEM-2.1-Open: its own model code (trust_remote_code=True), label
      1 = consistent, its prompt read from its config. Its code loads the google/flan-t5-base
      tokenizer and config by name: those must be in the local cache, and set
      HF_HUB_OFFLINE=1 so that code does not try the network.
    - `binary=...`, `seq2seq=...`: the generic kinds.
    """
    kind, sep, model = (spec or "").partition("=")
    kind = kind.strip().lower()
    if not sep or not model.strip():
        raise UserError(f"bad verifier {spec!r}: expected {SPEC_FORMS}")
    model = model.strip()
    presets: dict[str, dict[str, Any]] = {
        "nli": {"kind": "nli"},
        "binary": {"kind": "binary"},
        "seq2seq": {"kind": "seq2seq"},
        "minicheck": {"kind": "auto", "support_label": 1},
        "hhem": {"kind": "binary", "support_label": 1, "trust_remote_code": True},
    }
    if kind not in presets:
        raise UserError(f"unknown verifier kind {kind!r} in {spec!r}: expected {SPEC_FORMS}")
    chosen = {**presets[kind], **options}
    if kind == "minicheck" and "template" not in options:
        probe = ClassifierVerifier(model, **chosen)
        probe.template = (MINICHECK_SEQ2SEQ_TEMPLATE if probe.kind == "seq2seq"
                          else MINICHECK_TEMPLATE)
        return probe
    return ClassifierVerifier(model, **chosen)
