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

from __future__ import annotations

import importlib.util
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from serc_dspy.errors import UserError
from serc_dspy.text import split_sentences
from serc_dspy.trace import Verdict

Kind = Literal["auto", "nli", "binary", "seq2seq"]
KINDS = ("auto", "nli", "binary", "seq2seq")
DEFAULT_CHUNK_WORDS = 200
"""About 270 tokens of English: with the claim, a chunk fits a 512-token encoder."""
DEFAULT_BATCH_SIZE = 16
DEFAULT_MAX_LENGTH = 512
_DTYPES = ("float32", "bfloat16", "float16")
_INSTALL_HINT = (
    "install torch first (`pip install torch`, the build for your CPU/GPU), "
    "then `pip install 'serc-dspy[hf]'`"
)

MINICHECK_TEMPLATE = "{chunk}{eos}{claim}"
"""MiniCheck's classifiers read the chunk and the claim as one text joined by the tokenizer's
end-of-sequence token."""
MINICHECK_SEQ2SEQ_TEMPLATE = "predict: {chunk}{eos}{claim}"
"""MiniCheck-Flan-T5's input: the same text after a task prefix."""


class Thresholds(BaseModel):
    """Score cut-offs that turn a claim's best scores into a verdict (see the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    support: float = Field(0.5, ge=0.0, le=1.0)
    """SUPPORTED when the maximum support over the chunks is at least this."""
    contradiction: float = Field(0.5, ge=0.0, le=1.0)
    """CONTRADICTED (when not SUPPORTED) when the maximum contradiction is at least this.
    Unused by binary and seq2seq models, whose contradiction score is always 0."""


class VerifierVerdict(BaseModel):
    """One claim's verdict, its best scores over the evidence's chunks, and the chunk it rests
    on (the most supporting chunk; the most contradicting one for CONTRADICTED)."""

    claim: str
    verdict: Verdict
    support: float = Field(ge=0.0, le=1.0)
    contradiction: float = Field(ge=0.0, le=1.0)
    """0.0 from a model that cannot contradict (binary, seq2seq)."""
    chunk: str = ""
    """Empty when there was no evidence to score."""
    passage: int | None = None
    """Index of the evidence item the chunk comes from (0 for a single string)."""


@runtime_checkable
class Verifier(Protocol):
    """What SERC needs from a verifier: one verdict per claim, in order, sync and async."""

    def verify(self, claims: list[str], evidence: str | list[str]) -> list[VerifierVerdict]:
        ...

    async def averify(self, claims: list[str],
                      evidence: str | list[str]) -> list[VerifierVerdict]:
        ...


class ThreadedVerifier:
    """Base for blocking verifiers: `averify` runs `verify` in an AnyIO worker thread (in a
    copy of the caller's context), so the event loop keeps serving the run's other steps."""

    def verify(self, claims: list[str], evidence: str | list[str]) -> list[VerifierVerdict]:
        raise NotImplementedError

    async def averify(self, claims: list[str],
                      evidence: str | list[str]) -> list[VerifierVerdict]:
        from serc_dspy.steps import in_thread

        return await in_thread(self.verify, claims, evidence)


# == Chunking ===================================================================================


def _word_windows(sentence: str, size: int) -> list[str]:
    words = sentence.split()
    return [" ".join(words[i:i + size]) for i in range(0, len(words), size)]


def chunk_passage(text: str, chunk_words: int = DEFAULT_CHUNK_WORDS) -> list[str]:
    """`text` cut into chunks of at most `chunk_words` words, at sentence boundaries (a longer
    sentence is cut into windows of `chunk_words` words)."""
    if chunk_words < 1:
        raise UserError(f"chunk_words must be at least 1, not {chunk_words}")
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in split_sentences(text):
        for piece in _word_windows(sentence, chunk_words):
            words = len(piece.split())
            if current and count + words > chunk_words:
                chunks.append(" ".join(current))
                current, count = [], 0
            current.append(piece)
            count += words
    if current:
        chunks.append(" ".join(current))
    return chunks


def chunk_evidence(evidence: str | Sequence[str],
                   chunk_words: int = DEFAULT_CHUNK_WORDS) -> list[tuple[int, str]]:
    """(passage index, chunk) for every chunk of every evidence item, each distinct chunk once,
    in order. A chunk never spans two items."""
    items = [evidence] if isinstance(evidence, str) else list(evidence)
    seen: set[str] = set()
    out: list[tuple[int, str]] = []
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise UserError(f"evidence must be a string or a list of strings, not "
                            f"{type(item).__name__}")
        for chunk in chunk_passage(item, chunk_words):
            if chunk not in seen:
                seen.add(chunk)
                out.append((index, chunk))
    return out


def decide(support: float, contradiction: float, thresholds: Thresholds) -> Verdict:
    """The verdict for a claim's best scores (support first, see the module doc)."""
    if support >= thresholds.support:
        return "SUPPORTED"
    if contradiction > 0.0 and contradiction >= thresholds.contradiction:
        return "CONTRADICTED"
    return "NOT_FOUND"


# == Labels and score extraction (pure functions on the config and on logits) =================


def _normalise(label: Any) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(label).strip().lower()).strip("_")


def _id2label(config) -> dict[int, str]:
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


# == Model resolution ==========================================================================


def _require_packages() -> None:
    missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
    if missing:
        raise UserError(f"the classifier verifier needs {', '.join(missing)}, which "
                        f"{'is' if len(missing) == 1 else 'are'} not installed: {_INSTALL_HINT}.")


def resolve_model(model: str | Path) -> str:
    """A local model directory or a hub id whose config is in the local Hugging Face cache;
    anything else is a `UserError` that says what to do. Never touches the network."""
    from serc_dspy.backends.hf import hf_cache_dir, in_local_cache, is_hub_id

    name = str(model)
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UserError(f"verifier model directory {path} has no config.json: pass the "
                            "folder a transformers model was saved to (save_pretrained)")
        return str(path)
    if path.exists():
        raise UserError(f"verifier model {name} is a file; pass a model directory or a hub id "
                        "in the local Hugging Face cache")
    if not is_hub_id(name) or not in_local_cache(name, "config.json"):
        raise UserError(
            f"verifier model {name!r} is neither a local directory nor in the local Hugging "
            f"Face cache ({hf_cache_dir()}); models are never downloaded here: fetch it first "
            f"(e.g. `hf download {name}`) or pass the directory it was saved to")
    return name


def _is_seq2seq(config) -> bool:
    architectures = list(getattr(config, "architectures", None) or [])
    if any(a.endswith("ForSequenceClassification") for a in architectures):
        return False
    if any(a.endswith("ForConditionalGeneration") for a in architectures):
        return True
    return bool(getattr(config, "is_encoder_decoder", False))


# == The classifier verifier ===================================================================


class _Pending:
    """One `score_pairs` call waiting for the model."""

    __slots__ = ("pairs", "scores", "error", "done")

    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs = pairs
        self.scores: list[tuple[float, float]] = []
        self.error: BaseException | None = None
        self.done = False


class ClassifierVerifier(ThreadedVerifier):
    """A transformers classifier (NLI or binary support) or a MiniCheck-style seq2seq model
    as a claim verifier; see the module doc for kinds, chunking and thresholds.

    `model` is a local directory or a hub id in the local cache. `kind="auto"` reads the
    config: an encoder-decoder LM is seq2seq, a classifier with entailment and contradiction
    labels is NLI (unless `support_label` is given), any other classifier is binary (its
    supporting label found by name, or given as `support_label`).

    `template` formats a single input text from `{chunk}`, `{claim}` and `{eos}` (the
    tokenizer's end-of-sequence token; `{text1}`/`{text2}` are aliases of chunk/claim).
    Without one, a classifier reads the (chunk, claim) text pair (the NLI convention:
    premise, hypothesis), a config with an HHEM-style `prompt` uses that, and seq2seq uses
    `MINICHECK_SEQ2SEQ_TEMPLATE`.

    `device=None` is CUDA when torch sees one, else CPU; `dtype=None` is bfloat16 on CUDA,
    float32 elsewhere. `max_length` defaults to the tokenizer's (or the config's) maximum;
    longer inputs lose the end of their chunk.

    The config is read (and the labels checked) when the verifier is built; the weights load
    on first use (or `load()`).
    """

    def __init__(
        self,
        model: str | Path,
        *,
        kind: Kind = "auto",
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        chunk_words: int = DEFAULT_CHUNK_WORDS,
        thresholds: Thresholds | dict[str, float] | None = None,
        max_length: int | None = None,
        template: str | None = None,
        support_label: int | str | None = None,
        positive_token: str = "1",
        negative_token: str = "0",
        tokenizer: str | Path | None = None,
        trust_remote_code: bool = False,
    ):
        _require_packages()
        if kind not in KINDS:
            raise UserError(f"verifier kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if dtype is not None:
            dtype = str(dtype).removeprefix("torch.")
            if dtype not in _DTYPES:
                raise UserError(f"dtype must be one of {', '.join(_DTYPES)}, not {dtype!r}")
        for option, value in (("batch_size", batch_size), ("chunk_words", chunk_words),
                              ("max_length", max_length)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise UserError(f"{option} must be a positive integer, not {value!r}")
        if template is not None:
            _check_template(template)
        try:
            self.thresholds = (thresholds if isinstance(thresholds, Thresholds)
                               else Thresholds(**(thresholds or {})))
        except (TypeError, ValueError) as exc:
            raise UserError(f"bad verifier thresholds {thresholds!r}: {exc}") from exc
        self.model = str(model)
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.chunk_words = chunk_words
        self.max_length = max_length
        self.template = template
        self.positive_token = positive_token
        self.negative_token = negative_token
        self.trust_remote_code = trust_remote_code
        self._source = resolve_model(model)
        self._tokenizer_source = None if tokenizer is None else str(tokenizer)
        self._device = self._pick_device(device)
        self.config = self._read_config()
        self.kind, self._labels = self._resolve_kind(kind, support_label)
        self._lock = threading.Lock()  # one batch at a time on the model
        self._queue_lock = threading.Lock()
        self._queue: list[_Pending] = []
        self._loaded: tuple[Any, Any] | None = None
        self._token_ids: tuple[int, int] | None = None
        self.load_seconds: float | None = None
        self.batches = 0
        """Forward passes run so far (for throughput figures)."""
        self.pairs_scored = 0

    # -- setup ---------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return Path(self._source).name or self._source

    @staticmethod
    def _pick_device(device: str | None) -> str:
        import torch

        if device is None:
            return "cuda" if torch.cuda.is_available() else "cpu"
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise UserError(f"device {device!r} requested but torch sees no CUDA device")
        return device

    @property
    def resolved_dtype(self) -> str:
        return self.dtype or ("bfloat16" if self._device.startswith("cuda") else "float32")

    def _read_config(self):
        import transformers

        try:
            return transformers.AutoConfig.from_pretrained(
                self._source, local_files_only=True, trust_remote_code=self.trust_remote_code)
        except (OSError, ValueError) as exc:
            hint = ("" if self.trust_remote_code or "trust_remote_code" not in str(exc)
                    else " (this model ships its own code: pass trust_remote_code=True if you "
                    "trust it)")
            raise UserError(f"cannot read the config of verifier model {self.model}: "
                            f"{str(exc).splitlines()[0]}{hint}") from exc

    def _resolve_kind(self, kind: str, support_label) -> tuple[str, dict[str, int]]:
        config = self.config
        seq2seq = _is_seq2seq(config)
        if kind == "seq2seq" or (kind == "auto" and seq2seq):
            if not seq2seq:
                raise UserError(f"verifier model {self.model} is not an encoder-decoder LM "
                                f"({_arch(config)}); use kind='nli' or 'binary' for a "
                                "classifier")
            return "seq2seq", {}
        if seq2seq:
            raise UserError(f"verifier model {self.model} is an encoder-decoder LM "
                            f"({_arch(config)}), not a classifier: use kind='seq2seq'")
        id2label = _id2label(config)
        nli = nli_label_indices(id2label)
        if kind == "nli" or (kind == "auto" and nli and support_label is None):
            if nli is None:
                labels = ", ".join(f"{i}: {n!r}" for i, n in sorted(id2label.items()))
                raise UserError(
                    f"verifier model {self.model} has no recognisable NLI labels ({labels}): "
                    "an NLI model needs an entailment and a contradiction label in "
                    "config.id2label; for a support classifier use kind='binary'")
            return "nli", {"entailment": nli[0], "contradiction": nli[1]}
        support = binary_support_index(id2label, support_label, model=self.model)
        return "binary", {"support": support}

    def _input_template(self) -> str | None:
        if self.template is not None:
            return self.template
        prompt = getattr(self.config, "prompt", None)  # HHEM's config carries its prompt
        if isinstance(prompt, str) and "{text1}" in prompt and "{text2}" in prompt:
            return prompt
        return MINICHECK_SEQ2SEQ_TEMPLATE if self.kind == "seq2seq" else None

    def load(self) -> tuple[Any, Any]:
        """Load tokenizer and model once; returns (tokenizer, model)."""
        with self._lock:
            return self._load()

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is not None:
            return self._loaded
        import torch
        import transformers

        started = time.perf_counter()
        auto = (transformers.AutoModelForSeq2SeqLM if self.kind == "seq2seq"
                else transformers.AutoModelForSequenceClassification)
        options = {"local_files_only": True, "trust_remote_code": self.trust_remote_code}
        try:
            model = auto.from_pretrained(self._source, dtype=getattr(torch, self.resolved_dtype),
                                         **options)
        except (OSError, ValueError) as exc:
            raise UserError(f"cannot load verifier model {self.model}: "
                            f"{str(exc).splitlines()[0]}") from exc
        tokenizer = self._load_tokenizer(transformers, model, options)
        model.to(self._device)
        model.eval()
        if self.max_length is None:
            self.max_length = _max_length(tokenizer, self.config)
        if self.kind == "seq2seq":
            positive = label_token_id(tokenizer, self.positive_token)
            negative = label_token_id(tokenizer, self.negative_token)
            if positive == negative:
                raise UserError(f"the labels {self.positive_token!r} and "
                                f"{self.negative_token!r} start with the same token")
            self._token_ids = (positive, negative)
        self._loaded = (tokenizer, model)
        self.load_seconds = time.perf_counter() - started
        return self._loaded

    def _load_tokenizer(self, transformers, model, options):
        source = self._tokenizer_source or self._source
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(source, **options)
        except (OSError, ValueError, TypeError) as exc:
            # HHEM ships no tokenizer files: its own code loads one onto the model.
            tokenizer = getattr(model, "tokenizer", None) or getattr(model, "tokenzier", None)
            if tokenizer is None or self._tokenizer_source is not None:
                raise UserError(f"cannot load the tokenizer of verifier model {self.model}: "
                                f"{str(exc).splitlines()[0]}; pass tokenizer=DIR_OR_ID (in "
                                "the local cache)") from exc
        if tokenizer.pad_token is None:
            if tokenizer.eos_token is None:
                raise UserError(f"the tokenizer of {self.model} has no padding token and no "
                                "end-of-sequence token to pad with")
            tokenizer.pad_token = tokenizer.eos_token
        return tokenizer

    def close(self) -> None:
        """Drop the model (and its GPU memory); the next call loads it again."""
        with self._lock:
            self._loaded = None

    # -- scoring -------------------------------------------------------------------------------
    def verify(self, claims: list[str], evidence: str | list[str]) -> list[VerifierVerdict]:
        """One verdict per claim, in order: each claim scored against every chunk of the
        evidence, its best scores mapped through the thresholds."""
        if isinstance(claims, str):
            raise UserError("verify takes a list of claims, not one string")
        claims = [str(c) for c in claims]
        chunks = chunk_evidence(evidence, self.chunk_words)
        if not claims:
            return []
        if not chunks:
            return [VerifierVerdict(claim=c, verdict="NOT_FOUND", support=0.0, contradiction=0.0)
                    for c in claims]
        scores = self.score_pairs([(chunk, claim) for claim in claims for _, chunk in chunks])
        verdicts = []
        for n, claim in enumerate(claims):
            row = scores[n * len(chunks):(n + 1) * len(chunks)]
            best_support = max(range(len(row)), key=lambda i: row[i][0])
            best_contra = max(range(len(row)), key=lambda i: row[i][1])
            support, contradiction = row[best_support][0], row[best_contra][1]
            verdict = decide(support, contradiction, self.thresholds)
            at = best_contra if verdict == "CONTRADICTED" else best_support
            verdicts.append(VerifierVerdict(
                claim=claim, verdict=verdict, support=_unit(support),
                contradiction=_unit(contradiction), chunk=chunks[at][1], passage=chunks[at][0]))
        return verdicts

    def score_pairs(self, pairs: list[tuple[str, str]]) -> list[tuple[float, float]]:
        """(support, contradiction) for each (chunk, claim) pair. Distinct pairs are scored
        once, longest first (less padding), in batches of `batch_size`.

        Calls from several threads are served together: the thread that gets the model scores
        every pair waiting at that moment in shared batches, so the many small checks SERC
        runs at once fill a GPU's batches instead of queueing one by one. A failure reaches
        every call it served."""
        if not pairs:
            return []
        pending = _Pending(list(pairs))
        with self._queue_lock:
            self._queue.append(pending)
        with self._lock:
            if not pending.done:
                with self._queue_lock:
                    taken, self._queue = self._queue, []
                self._serve(taken)
        if pending.error is not None:
            raise pending.error
        return pending.scores

    def _serve(self, taken: list[_Pending]) -> None:
        """Score the pairs of every request in `taken` (the caller holds the lock)."""
        try:
            self._load()
            distinct = list(dict.fromkeys(pair for request in taken for pair in request.pairs))
            distinct.sort(key=lambda pair: -len(pair[0]) - len(pair[1]))
            found: dict[tuple[str, str], tuple[float, float]] = {}
            for start in range(0, len(distinct), self.batch_size):
                batch = distinct[start:start + self.batch_size]
                found.update(zip(batch, self._score_batch(batch), strict=True))
            for request in taken:
                request.scores = [found[pair] for pair in request.pairs]
        except BaseException as exc:
            for request in taken:
                request.error = exc
        finally:
            for request in taken:
                request.done = True

    def _score_batch(self, batch: list[tuple[str, str]]) -> list[tuple[float, float]]:
        """Score one batch (the caller holds the lock and has loaded the model)."""
        import torch

        tokenizer, model = self._loaded
        encoded = self._encode(tokenizer, batch)
        encoded = {k: v.to(self._device) for k, v in encoded.items()}
        with torch.inference_mode():
            if self.kind == "seq2seq":
                start_id = _decoder_start(model)
                decoder = torch.full((encoded["input_ids"].shape[0], 1), start_id,
                                     dtype=torch.long, device=self._device)
                logits = model(input_ids=encoded["input_ids"],
                               attention_mask=encoded["attention_mask"],
                               decoder_input_ids=decoder).logits[:, 0, :]
                positive, negative = self._token_ids
                support, contradiction = seq2seq_scores(logits, positive, negative)
            else:
                logits = model(**encoded).logits
                if self.kind == "nli":
                    support, contradiction = nli_scores(
                        logits, self._labels["entailment"], self._labels["contradiction"])
                else:
                    support, contradiction = binary_scores(logits, self._labels["support"])
        self.batches += 1
        self.pairs_scored += len(batch)
        return list(zip(support.cpu().tolist(), contradiction.cpu().tolist(), strict=True))

    def _encode(self, tokenizer, batch: list[tuple[str, str]]):
        options = {"padding": True, "truncation": True, "max_length": self.max_length,
                   "return_tensors": "pt"}
        template = self._input_template()
        if template is None:
            encoded = tokenizer([c for c, _ in batch], [h for _, h in batch], **options)
        else:
            texts = self._fit(tokenizer, template, batch)
            encoded = tokenizer(texts, **options)
        keep = ("input_ids", "attention_mask", "token_type_ids")
        return {k: v for k, v in encoded.items() if k in keep}

    def _fit(self, tokenizer, template: str, batch: list[tuple[str, str]]) -> list[str]:
        """One text per pair; a text longer than `max_length` tokens loses the end of its
        chunk (not of its claim, which a plain truncation would cut)."""
        eos = tokenizer.eos_token or tokenizer.sep_token or " "

        def render(chunk: str, claim: str) -> str:
            return template.format(chunk=chunk, claim=claim, eos=eos, text1=chunk, text2=claim)

        texts = [render(chunk, claim) for chunk, claim in batch]
        lengths = [len(ids) for ids in tokenizer(texts, verbose=False)["input_ids"]]
        for i, ((chunk, claim), length) in enumerate(zip(batch, lengths, strict=True)):
            words = chunk.split()
            while length > self.max_length and len(words) > 1:
                keep = min(len(words) - 1, int(len(words) * self.max_length / length * 0.95))
                words = words[:max(1, keep)]
                texts[i] = render(" ".join(words), claim)
                length = len(tokenizer(texts[i], verbose=False)["input_ids"])
        return texts

    # -- state ---------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """What a trace or a results file should record about this verifier."""
        return {"model": self.model, "kind": self.kind, "device": self._device,
                "dtype": self.resolved_dtype, "batch_size": self.batch_size,
                "chunk_words": self.chunk_words, "max_length": self.max_length,
                "thresholds": self.thresholds.model_dump()}


def _check_template(template: str) -> None:
    if "{claim}" not in template and "{text2}" not in template:
        raise UserError("a verifier template needs a {claim} field (and usually {chunk})")
    try:
        template.format(chunk="", claim="", eos="", text1="", text2="")
    except (KeyError, IndexError, ValueError) as exc:
        raise UserError(f"bad verifier template {template!r}: only {{chunk}}, {{claim}} and "
                        f"{{eos}} can be filled in (double any other brace): {exc!r}") from exc


def _arch(config) -> str:
    return ", ".join(getattr(config, "architectures", None) or [config.model_type])


def _unit(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def _max_length(tokenizer, config) -> int:
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 100_000:
        return limit
    for attribute in ("max_position_embeddings", "n_positions"):
        value = getattr(config, attribute, None)
        if isinstance(value, int) and value > 0:
            return value
    return DEFAULT_MAX_LENGTH


def _decoder_start(model) -> int:
    config = model.config
    for value in (getattr(model.generation_config, "decoder_start_token_id", None),
                  getattr(config, "decoder_start_token_id", None),
                  getattr(config, "pad_token_id", None)):
        if isinstance(value, int):
            return value
    raise UserError(f"the seq2seq verifier model {config.name_or_path} defines no decoder "
                    "start token")


# == Specs =====================================================================================

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
