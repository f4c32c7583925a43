"""`ClassifierVerifier`: a transformers model scoring (chunk, claim) pairs in shared batches.

See the package doc for the three kinds of model, the chunking and the thresholds. This module
holds the model's lifecycle (read the config, load on first use, close) and the scoring loop:
calls from many threads are served together, so SERC's many small checks fill a GPU's batches.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from serc_dspy.core.errors import UserError
from serc_dspy.verifiers.base import (
    KINDS,
    Kind,
    ThreadedVerifier,
    Thresholds,
    VerifierVerdict,
    decide,
)
from serc_dspy.verifiers.chunks import DEFAULT_CHUNK_WORDS, chunk_evidence
from serc_dspy.verifiers.models import (
    architecture,
    decoder_start,
    is_seq2seq,
    max_length_of,
    require_packages,
    resolve_model,
)
from serc_dspy.verifiers.scores import (
    binary_scores,
    binary_support_index,
    label_token_id,
    nli_label_indices,
    nli_scores,
    read_id2label,
    seq2seq_scores,
)

DEFAULT_BATCH_SIZE = 16
_DTYPES = ("float32", "bfloat16", "float16")

MINICHECK_TEMPLATE = "{chunk}{eos}{claim}"
"""MiniCheck's classifiers read the chunk and the claim as one text joined by the tokenizer's
end-of-sequence token."""
MINICHECK_SEQ2SEQ_TEMPLATE = "predict: {chunk}{eos}{claim}"
"""MiniCheck-Flan-T5's input: the same text after a task prefix."""


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
    as a claim verifier; see the package doc (`serc_dspy.verifiers`) for kinds, chunking and
    thresholds.

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
        require_packages()
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
        self._config_prompt = self._read_config_prompt()
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

    def __repr__(self) -> str:
        """What a results file records for `verifier=`: the model and kind, not an address."""
        return f"ClassifierVerifier({self._source!r}, kind={self.kind!r})"

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
        seq2seq = is_seq2seq(config)
        if kind == "seq2seq" or (kind == "auto" and seq2seq):
            if not seq2seq:
                raise UserError(f"verifier model {self.model} is not an encoder-decoder LM "
                                f"({architecture(config)}); use kind='nli' or 'binary' for a "
                                "classifier")
            return "seq2seq", {}
        if seq2seq:
            raise UserError(f"verifier model {self.model} is an encoder-decoder LM "
                            f"({architecture(config)}), not a classifier: use kind='seq2seq'")
        id2label = read_id2label(config)
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

    def _read_config_prompt(self) -> str | None:
        """HHEM's config carries its prompt template: checked once, when the verifier is
        built, so a malformed one is a clear error there rather than a failure of every
        call."""
        prompt = getattr(self.config, "prompt", None)
        if isinstance(prompt, str) and "{text1}" in prompt and "{text2}" in prompt:
            _check_template(prompt)
            return prompt
        return None

    def _input_template(self) -> str | None:
        if self.template is not None:
            return self.template
        if self._config_prompt is not None:
            return self._config_prompt
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
            self.max_length = max_length_of(tokenizer, self.config)
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
                start_id = decoder_start(model)
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


def _unit(value: float) -> float:
    return min(1.0, max(0.0, float(value)))
