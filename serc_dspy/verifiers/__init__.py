"""Pluggable claim-versus-evidence verifiers: a small classifier instead of an LM judge.

A verifier takes claims and evidence and returns one `VerifierVerdict` per claim, in the trace's
verdict vocabulary (SUPPORTED / CONTRADICTED / NOT_FOUND) with the scores behind it.
`ClassifierVerifier` runs a transformers model in-process, the MiniCheck way: the evidence is
cut into chunks of about `chunk_words` words at sentence boundaries (never across passages),
every (chunk, claim) pair is scored in padded batches, and a claim's support (and
contradiction) is the maximum over the chunks. Three kinds of model:

- `nli`: a 3-way NLI sequence classifier. The labels are read from `config.id2label`, matched
  case-insensitively (`entailment`/`entail...`, `neutral`, `contradiction`/`contradict...`).
  support = P(entailment), contradiction = P(contradiction).
- `binary`: a support classifier (MiniCheck-RoBERTa/DeBERTa, HHEM-like): support = P(the
  supporting label), or sigmoid of a single logit. It cannot say CONTRADICTED: its
  contradiction score is always 0.0 and its verdicts are SUPPORTED or NOT_FOUND.
- `seq2seq`: a MiniCheck-Flan-T5-style model: support = the probability of the first token of
  "1" against the first token of "0" as the first decoder token (softmax over those two
  logits). Also binary: never CONTRADICTED.

Verdicts (`Thresholds`, overridable): SUPPORTED when the support of some chunk reaches
`support` (0.5); else CONTRADICTED when the contradiction of some chunk reaches
`contradiction` (0.5, NLI only); else NOT_FOUND. Support wins over a contradiction from another
chunk: retrieved passages often describe someone else of the same name, and an NLI model calls
much unrelated text a contradiction, whereas one chunk stating the claim is direct evidence.

Models are a local directory or a hub id already in the local Hugging Face cache: nothing is
ever downloaded. On CUDA the model runs in bfloat16 by default, on CPU in float32. SERC is
asynchronous: `averify` runs the blocking `verify` in a worker thread; calls on one verifier
share one model, and concurrent calls are scored together in shared batches.
"""

from serc_dspy.verifiers.base import (
    KINDS,
    Kind,
    ThreadedVerifier,
    Thresholds,
    Verifier,
    VerifierVerdict,
    decide,
)
from serc_dspy.verifiers.chunks import DEFAULT_CHUNK_WORDS, chunk_evidence, chunk_passage
from serc_dspy.verifiers.classifier import (
    DEFAULT_BATCH_SIZE,
    MINICHECK_SEQ2SEQ_TEMPLATE,
    MINICHECK_TEMPLATE,
    ClassifierVerifier,
)
from serc_dspy.verifiers.models import DEFAULT_MAX_LENGTH, resolve_model
from serc_dspy.verifiers.scores import (
    binary_scores,
    binary_support_index,
    label_token_id,
    nli_label_indices,
    nli_scores,
    seq2seq_scores,
)
from serc_dspy.verifiers.spec import SPEC_FORMS, verifier_from_spec

__all__ = [
    "DEFAULT_BATCH_SIZE", "DEFAULT_CHUNK_WORDS", "DEFAULT_MAX_LENGTH", "KINDS",
    "MINICHECK_SEQ2SEQ_TEMPLATE", "MINICHECK_TEMPLATE", "SPEC_FORMS", "ClassifierVerifier",
    "Kind", "ThreadedVerifier", "Thresholds", "Verifier", "VerifierVerdict", "binary_scores",
    "binary_support_index", "chunk_evidence", "chunk_passage", "decide", "label_token_id",
    "nli_label_indices", "nli_scores", "resolve_model", "seq2seq_scores", "verifier_from_spec",
]
