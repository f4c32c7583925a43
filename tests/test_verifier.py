"""The classifier verifier, with tiny models built and saved here (nothing is downloaded).

The models are random; each test that needs known scores sets the output layer (zero weights,
a bias favouring one label) or replaces the batch scorer with a stub.
"""

import asyncio
import socket
import threading
import time

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from serc_dspy import verifiers as module  # noqa: E402
from serc_dspy.core.errors import UserError  # noqa: E402
from serc_dspy.verifiers import (  # noqa: E402
    MINICHECK_SEQ2SEQ_TEMPLATE,
    MINICHECK_TEMPLATE,
    ClassifierVerifier,
    Thresholds,
    Verifier,
    VerifierVerdict,
    binary_scores,
    binary_support_index,
    chunk_evidence,
    chunk_passage,
    nli_label_indices,
    nli_scores,
    seq2seq_scores,
    verifier_from_spec,
)

SENTENCES = [
    "Marie Curie was born in Warsaw in 1867.",
    "She moved to Paris in 1891 and studied physics.",
    "She won the Nobel Prize in Physics in 1903.",
    "Pierre Curie died in Paris in 1906.",
    "predict : 0 1",
]
NLI_LABELS = {0: "contradiction", 1: "ENTAILMENT", 2: "Neutral"}  # not the usual order


def _word_tokenizer(specials: list[str], **tokens):
    """A word-level fast tokenizer trained on SENTENCES."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

    unk = tokens["unk_token"]
    tok = Tokenizer(models.WordLevel(unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(SENTENCES, trainers.WordLevelTrainer(special_tokens=specials))
    if "cls_token" in tokens:
        cls, sep = tokens["cls_token"], tokens["sep_token"]
        tok.post_processor = processors.TemplateProcessing(
            single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1",
            special_tokens=[(cls, tok.token_to_id(cls)), (sep, tok.token_to_id(sep))])
    else:
        eos = tokens["eos_token"]
        tok.post_processor = processors.TemplateProcessing(
            single=f"$A {eos}", pair=f"$A {eos} $B {eos}",
            special_tokens=[(eos, tok.token_to_id(eos))])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=64,
                                                **tokens)


def _save_bert(path, id2label):
    tokenizer = _word_tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]"], unk_token="[UNK]",
                                pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]")
    config = transformers.BertConfig(
        vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, num_labels=len(id2label),
        id2label=id2label, label2id={v: k for k, v in id2label.items()})
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _save_t5(path):
    tokenizer = _word_tokenizer(["<pad>", "</s>", "<unk>"], unk_token="<unk>",
                                pad_token="<pad>", eos_token="</s>")
    config = transformers.T5Config(
        vocab_size=len(tokenizer), d_model=16, d_kv=8, d_ff=32, num_layers=1,
        num_decoder_layers=1, num_heads=2, relative_attention_num_buckets=8,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    torch.manual_seed(0)
    transformers.T5ForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("verifier-models")
    return {
        "nli": _save_bert(root / "nli", NLI_LABELS),
        "binary": _save_bert(root / "binary", {0: "unsupported", 1: "SUPPORTED"}),
        "generic": _save_bert(root / "generic", {0: "LABEL_0", 1: "LABEL_1"}),
        "odd": _save_bert(root / "odd", {0: "alpha", 1: "beta", 2: "gamma"}),
        "t5": _save_t5(root / "t5"),
    }


def _favour(verifier, index: int, *, strength: float = 6.0):
    """Make the loaded classifier output the same logits for every input, favouring `index`."""
    _, model = verifier.load()
    head = model.classifier
    with torch.no_grad():
        head.weight.zero_()
        head.bias.zero_()
        head.bias[index] = strength


def _count_forwards(verifier) -> list[int]:
    """Record the batch size of every forward pass of the loaded model."""
    _, model = verifier.load()
    sizes: list[int] = []
    original = model.forward

    def forward(*args, **kwargs):
        sizes.append(kwargs["input_ids"].shape[0])
        return original(*args, **kwargs)

    model.forward = forward
    return sizes


CLAIMS = ["Marie Curie was born in Warsaw.", "She moved to Paris.", "She won a prize.",
          "Pierre died in 1906.", "She studied physics."]
PASSAGES = SENTENCES[:3]


# --- NLI: loading, batching, labels, verdicts ---------------------------------------------


def test_nli_model_loads_from_a_local_path_and_batches(models):
    verifier = ClassifierVerifier(models["nli"], batch_size=4)
    assert verifier.kind == "nli" and verifier._labels == {"entailment": 1, "contradiction": 0}
    assert verifier._loaded is None  # the weights load on first use
    sizes = _count_forwards(verifier)
    verdicts = verifier.verify(CLAIMS, PASSAGES)  # 5 claims x 3 chunks = 15 pairs
    assert sizes == [4, 4, 4, 3]
    assert verifier.batches == 4 and verifier.pairs_scored == 15
    assert [v.claim for v in verdicts] == CLAIMS
    for v in verdicts:
        assert isinstance(v, VerifierVerdict)
        assert 0.0 <= v.support <= 1.0 and 0.0 <= v.contradiction <= 1.0
        assert v.chunk in PASSAGES and v.passage == PASSAGES.index(v.chunk)
    assert isinstance(verifier, Verifier)


def test_repeated_pairs_are_scored_once(models):
    verifier = ClassifierVerifier(models["nli"], batch_size=16)
    sizes = _count_forwards(verifier)
    verifier.verify(["She won a prize.", "She won a prize."], PASSAGES + [PASSAGES[0]])
    assert sizes == [3]


@pytest.mark.parametrize(("index", "expected"), [
    (1, "SUPPORTED"), (0, "CONTRADICTED"), (2, "NOT_FOUND")])
def test_nli_scores_map_to_verdicts(models, index, expected):
    verifier = ClassifierVerifier(models["nli"], batch_size=4)
    _favour(verifier, index)
    verdicts = verifier.verify(CLAIMS, PASSAGES)
    assert {v.verdict for v in verdicts} == {expected}
    v = verdicts[0]
    if expected == "SUPPORTED":
        assert v.support > 0.9 and v.contradiction < 0.05
    elif expected == "CONTRADICTED":
        assert v.contradiction > 0.9 and v.support < 0.05
    else:
        assert v.support < 0.05 and v.contradiction < 0.05


def test_thresholds_are_overridable(models):
    verifier = ClassifierVerifier(models["nli"], thresholds={"support": 0.99})
    _favour(verifier, 1, strength=3.0)  # P(entailment) = e^3 / (e^3 + 2) = 0.91
    verdict = verifier.verify(["She won a prize."], PASSAGES)[0]
    assert 0.85 < verdict.support < 0.95 and verdict.verdict == "NOT_FOUND"
    assert ClassifierVerifier(models["nli"]).thresholds == Thresholds(support=0.5,
                                                                      contradiction=0.5)
    with pytest.raises(UserError, match="thresholds"):
        ClassifierVerifier(models["nli"], thresholds={"support": 1.5})
    with pytest.raises(UserError, match="thresholds"):
        ClassifierVerifier(models["nli"], thresholds={"entail": 0.5})


# --- the maximum over chunks (a stub scorer: known scores per pair) -------------------------


def _stub_scores(verifier, table: dict[str, tuple[float, float]]):
    """Score a pair by the first word of the table found in its chunk; (0.1, 0.1) else."""
    def score(batch):
        out = []
        for chunk, _claim in batch:
            out.append(next((s for word, s in table.items() if word in chunk), (0.1, 0.1)))
        return out

    verifier._score_batch = score


def test_a_claim_supported_by_one_chunk_is_supported(models):
    verifier = ClassifierVerifier(models["nli"], chunk_words=8)
    _stub_scores(verifier, {"Warsaw": (0.9, 0.05)})
    evidence = ["Pierre Curie died in Paris in 1906. He was a physicist.",
                "The family lived in Paris. Marie Curie was born in Warsaw in 1867."]
    chunks = [c for _, c in chunk_evidence(evidence, 8)]
    assert len(chunks) == 4  # four sentences, none of them fit together in 8 words
    verdict = verifier.verify(["Marie Curie was born in Warsaw."], evidence)[0]
    assert verdict.verdict == "SUPPORTED" and verdict.support == pytest.approx(0.9)
    assert verdict.chunk == "Marie Curie was born in Warsaw in 1867." and verdict.passage == 1


def test_contradiction_by_one_chunk_and_support_winning_over_it(models):
    verifier = ClassifierVerifier(models["nli"], chunk_words=8)
    _stub_scores(verifier, {"1868": (0.02, 0.95)})
    evidence = "He lived in Paris. Marie Curie was born in 1868 in Warsaw. She had two girls."
    verdict = verifier.verify(["Marie Curie was born in 1867."], evidence)[0]
    assert verdict.verdict == "CONTRADICTED" and verdict.contradiction == pytest.approx(0.95)
    assert verdict.chunk == "Marie Curie was born in 1868 in Warsaw."
    assert verdict.support == pytest.approx(0.1)  # the best support, from another chunk
    _stub_scores(verifier, {"1868": (0.02, 0.95), "1867": (0.8, 0.1)})
    verdict = verifier.verify(["Marie Curie was born in 1867."],
                              [evidence, "Curie: born 1867."])[0]
    assert verdict.verdict == "SUPPORTED" and verdict.chunk == "Curie: born 1867."
    assert verdict.contradiction == pytest.approx(0.95)


def test_no_evidence_and_no_claims(models):
    verifier = ClassifierVerifier(models["nli"])
    assert verifier.verify([], PASSAGES) == []
    verdicts = verifier.verify(["A claim."], ["", "   "])
    assert [(v.verdict, v.support, v.chunk) for v in verdicts] == [("NOT_FOUND", 0.0, "")]
    assert verifier._loaded is None  # nothing to score, nothing loaded
    with pytest.raises(UserError, match="list of claims"):
        verifier.verify("A claim.", PASSAGES)


def test_averify_runs_verify_in_a_thread(models):
    verifier = ClassifierVerifier(models["nli"])
    _favour(verifier, 1)

    async def both():
        return await asyncio.gather(verifier.averify(CLAIMS[:2], PASSAGES),
                                    verifier.averify(CLAIMS[2:], PASSAGES))

    first, second = asyncio.run(both())
    assert [v.claim for v in first + second] == CLAIMS
    assert {v.verdict for v in first + second} == {"SUPPORTED"}


def _while_the_model_is_busy(verifier, calls: list, expected_waiting: int):
    """Run `calls` in threads while the model's lock is held, until all of them wait; then
    release it. Returns each call's result (or exception), in order."""
    results: list = [None] * len(calls)

    def run(i):
        try:
            results[i] = calls[i]()
        except Exception as exc:  # handed back to the test
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    with verifier._lock:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while len(verifier._queue) < expected_waiting:
            assert time.monotonic() < deadline, "the calls never queued"
            time.sleep(0.01)
    for thread in threads:
        thread.join(30)
    return results


def test_concurrent_calls_share_batches(models):
    verifier = ClassifierVerifier(models["nli"], batch_size=64)
    alone = [verifier.verify([claim], PASSAGES)[0] for claim in CLAIMS[:3]]
    sizes = _count_forwards(verifier)
    results = _while_the_model_is_busy(
        verifier, [lambda c=c: verifier.verify([c], PASSAGES) for c in CLAIMS[:3]], 3)
    assert sizes == [9]  # three calls of 3 pairs, one forward pass
    assert [r[0] for r in results] == alone


def test_a_failed_shared_batch_fails_every_call_it_served(models):
    verifier = ClassifierVerifier(models["nli"])
    verifier.load()

    def broken(batch):
        raise RuntimeError("CUDA out of memory")

    verifier._score_batch = broken
    results = _while_the_model_is_busy(
        verifier, [lambda c=c: verifier.verify([c], PASSAGES) for c in CLAIMS[:2]], 2)
    assert all(isinstance(r, RuntimeError) and "out of memory" in str(r) for r in results)
    assert verifier._queue == []


# --- binary support models -------------------------------------------------------------------


@pytest.mark.parametrize(("index", "expected"), [(1, "SUPPORTED"), (0, "NOT_FOUND")])
def test_binary_model_is_supported_or_not_found(models, index, expected):
    verifier = ClassifierVerifier(models["binary"])
    assert verifier.kind == "binary" and verifier._labels == {"support": 1}
    _favour(verifier, index)
    verdicts = verifier.verify(CLAIMS, PASSAGES)
    assert {v.verdict for v in verdicts} == {expected}
    assert {v.contradiction for v in verdicts} == {0.0}  # a binary model cannot contradict


def test_binary_score_extraction():
    logits = torch.tensor([[0.0, 2.0], [2.0, 0.0]])
    support, contradiction = binary_scores(logits, 1)
    assert support.tolist() == pytest.approx([0.8808, 0.1192], abs=1e-4)
    assert contradiction.tolist() == [0.0, 0.0]
    single, _ = binary_scores(torch.tensor([[0.0], [2.0]]), 0)  # one logit: sigmoid
    assert single.tolist() == pytest.approx([0.5, 0.8808], abs=1e-4)
    support, contradiction = nli_scores(torch.tensor([[0.0, 0.0, 0.0]], dtype=torch.bfloat16),
                                        1, 0)
    assert support.dtype == torch.float32 and support.item() == pytest.approx(1 / 3)


# --- seq2seq (MiniCheck-Flan-T5 style) --------------------------------------------------------


def test_seq2seq_score_extraction_on_fake_logits():
    logits = torch.full((2, 10), -5.0)
    logits[0, 7], logits[0, 3] = 2.0, 0.0  # positive "1" at 7, negative "0" at 3
    logits[1, 7], logits[1, 3] = 0.0, 2.0
    support, contradiction = seq2seq_scores(logits, positive_id=7, negative_id=3)
    assert support.tolist() == pytest.approx([0.8808, 0.1192], abs=1e-4)
    assert contradiction.tolist() == [0.0, 0.0]


@pytest.mark.parametrize(("token", "expected"), [("1", "SUPPORTED"), ("0", "NOT_FOUND")])
def test_tiny_t5_scores_the_first_decoder_token(models, token, expected):
    verifier = ClassifierVerifier(models["t5"], batch_size=2)
    assert verifier.kind == "seq2seq"
    assert verifier._input_template() == MINICHECK_SEQ2SEQ_TEMPLATE
    tokenizer, model = verifier.load()
    positive, negative = verifier._token_ids
    assert tokenizer.convert_ids_to_tokens([positive, negative]) == ["1", "0"]
    head = torch.nn.Linear(model.config.d_model, model.config.vocab_size, bias=True)
    with torch.no_grad():
        head.weight.zero_()
        head.bias.zero_()
        head.bias[tokenizer.convert_tokens_to_ids(token)] = 4.0
    model.lm_head = head
    sizes = _count_forwards(verifier)
    verdicts = verifier.verify(CLAIMS[:3], PASSAGES[:2])
    assert sizes == [2, 2, 2]
    assert {v.verdict for v in verdicts} == {expected}
    assert {v.contradiction for v in verdicts} == {0.0}


def test_template_inputs_lose_the_end_of_the_chunk_not_the_claim(models):
    verifier = ClassifierVerifier(models["t5"], max_length=12)
    tokenizer, _ = verifier.load()
    long_chunk = " ".join(["Paris"] * 40)
    (text,) = verifier._fit(tokenizer, verifier._input_template(), [(long_chunk, "She won.")])
    assert text.startswith("predict: Paris") and text.endswith("</s>She won.")
    assert len(tokenizer(text)["input_ids"]) <= 12


# --- labels ----------------------------------------------------------------------------------


def test_nli_labels_are_read_case_insensitively():
    assert nli_label_indices({0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"}) == (0, 2)
    assert nli_label_indices({0: "Contradiction", 1: "Neutral", 2: "Entailment"}) == (2, 0)
    assert nli_label_indices({0: "entailed", 1: "contradicted"}) == (0, 1)
    assert nli_label_indices({0: "entailment", 1: "not_entailment"}) is None
    assert nli_label_indices({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}) is None
    assert binary_support_index({0: "not_entailment", 1: "Entailment"}) == 1
    assert binary_support_index({0: "Supported", 1: "Unsupported"}) == 0
    assert binary_support_index({0: "LABEL_0", 1: "LABEL_1"}, "label_1") == 1
    assert binary_support_index({0: "score"}) == 0


def test_unrecognisable_labels_are_a_clear_error(models):
    with pytest.raises(UserError, match="no recognisable NLI labels.*'alpha'"):
        ClassifierVerifier(models["odd"], kind="nli")
    with pytest.raises(UserError, match="cannot tell which.*support_label"):
        ClassifierVerifier(models["odd"])
    with pytest.raises(UserError, match="cannot tell which.*'LABEL_0'.*support_label"):
        ClassifierVerifier(models["generic"])
    with pytest.raises(UserError, match="support_label 5 is not one of"):
        ClassifierVerifier(models["generic"], support_label=5)
    assert ClassifierVerifier(models["generic"], support_label=1)._labels == {"support": 1}
    with pytest.raises(UserError, match="no recognisable NLI labels"):
        ClassifierVerifier(models["binary"], kind="nli")
    with pytest.raises(UserError, match="kind='seq2seq'"):
        ClassifierVerifier(models["t5"], kind="nli")
    with pytest.raises(UserError, match="not an encoder-decoder"):
        ClassifierVerifier(models["nli"], kind="seq2seq")


# --- resolution: nothing is downloaded --------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the verifier tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_missing_local_model_is_a_clear_error(tmp_path, monkeypatch, no_network):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(UserError) as info:
        ClassifierVerifier("cross-encoder/nli-deberta-v3-small")
    message = str(info.value)
    assert "local Hugging Face cache" in message and "never downloaded" in message
    assert "hf download cross-encoder/nli-deberta-v3-small" in message
    with pytest.raises(UserError, match="neither a local directory"):
        ClassifierVerifier(tmp_path / "no-such-model")
    with pytest.raises(UserError, match="no config.json"):
        ClassifierVerifier(tmp_path)
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(UserError, match="is a file"):
        ClassifierVerifier(tmp_path / "weights.bin")


def test_bad_options_are_clear_errors(models):
    with pytest.raises(UserError, match="kind must be one of"):
        ClassifierVerifier(models["nli"], kind="minicheck")
    with pytest.raises(UserError, match="dtype must be one of"):
        ClassifierVerifier(models["nli"], dtype="int8")
    with pytest.raises(UserError, match="batch_size must be a positive integer"):
        ClassifierVerifier(models["nli"], batch_size=0)
    with pytest.raises(UserError, match=r"\{claim\}"):
        ClassifierVerifier(models["nli"], template="{chunk}")
    with pytest.raises(UserError, match="only {chunk}, {claim} and {eos}"):
        ClassifierVerifier(models["nli"], template="{premise} {claim}")


# --- device and dtype --------------------------------------------------------------------------


def test_device_and_dtype_defaults(models):
    verifier = ClassifierVerifier(models["nli"])
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert verifier._device == expected
    assert verifier.resolved_dtype == ("bfloat16" if expected == "cuda" else "float32")
    _, model = verifier.load()
    assert next(model.parameters()).dtype == getattr(torch, verifier.resolved_dtype)
    assert verifier.describe()["max_length"] == 64  # the tokenizer's maximum
    cpu16 = ClassifierVerifier(models["nli"], device="cpu", dtype="torch.bfloat16")
    _favour(cpu16, 1)
    assert next(cpu16.load()[1].parameters()).dtype == torch.bfloat16
    assert cpu16.verify(["She won a prize."], PASSAGES)[0].verdict == "SUPPORTED"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_cuda_without_a_device_is_a_clear_error(models):
    with pytest.raises(UserError, match="no CUDA device"):
        ClassifierVerifier(models["nli"], device="cuda")


# --- chunking and specs -------------------------------------------------------------------------


def test_chunks_follow_sentences_and_never_span_passages():
    text = "One two three. Four five six seven. Eight."
    assert chunk_passage(text, 7) == ["One two three. Four five six seven.", "Eight."]
    assert chunk_passage(text, 3) == ["One two three.", "Four five six", "seven. Eight."]
    assert chunk_passage("A b c d e f g.", 3) == ["A b c", "d e f", "g."]
    assert chunk_evidence(["A b.", "C d.", "A b."], 50) == [(0, "A b."), (1, "C d.")]
    with pytest.raises(UserError, match="chunk_words"):
        chunk_passage(text, 0)


def test_verifier_from_spec(models):
    assert verifier_from_spec(f"nli={models['nli']}").kind == "nli"
    assert verifier_from_spec(f"binary={models['binary']}", batch_size=2).batch_size == 2
    t5 = verifier_from_spec(f"minicheck={models['t5']}")
    assert t5.kind == "seq2seq" and t5.template == MINICHECK_SEQ2SEQ_TEMPLATE
    classifier = verifier_from_spec(f"minicheck={models['generic']}")
    assert classifier.kind == "binary" and classifier._labels == {"support": 1}
    assert classifier.template == MINICHECK_TEMPLATE
    tokenizer, _ = classifier.load()
    texts = classifier._fit(tokenizer, classifier._input_template(), [("A b.", "C d.")])
    assert texts == ["A b.[SEP]C d."]  # no end-of-sequence token: the separator
    _favour(classifier, 1)
    assert classifier.verify(["She won a prize."], PASSAGES)[0].verdict == "SUPPORTED"
    for bad in ("nli", "nli=", "roberta=x", ""):
        with pytest.raises(UserError, match="verifier"):
            verifier_from_spec(bad)


def test_module_documents_its_thresholds():
    assert "SUPPORTED when the support of some chunk reaches" in module.__doc__
    assert "cannot say CONTRADICTED" in module.__doc__


# --- `--verifier` on the command line -----------------------------------------------------

def _always(models, tmp_path, label: str):
    """A copy of the tiny NLI model whose head always gives `label`, saved for the CLI."""
    verifier = ClassifierVerifier(models["nli"])
    _favour(verifier, {v.lower(): k for k, v in NLI_LABELS.items()}[label])
    tokenizer, model = verifier.load()
    path = tmp_path / label
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.mark.parametrize("label, status", [("contradiction", "corrected"),
                                           ("entailment", "disputed")])
def test_the_verifier_flag_makes_the_classifier_one_of_two_signals(models, tmp_path, monkeypatch,
                                                                   capsys, label, status):
    import json

    from conftest import EXAMPLES
    from scripted import entity, scripted_lm

    from serc_dspy.cli import main

    kraków = "Marie Curie was born in Kraków in 1867."
    handlers = {
        "QueryEntity": lambda i: entity("Marie Curie"),
        "AnswerEntity": lambda i: entity("Marie Curie", "physicist"),
        "EvidenceEntity": lambda i: entity("Marie Curie", "physicist"),
        "SameEntity": lambda i: {"analysis": "Same.", "same": "YES"},
        "AtomicFacts": lambda i: {"facts": [i["sentence"]]},
        # a contradiction that cites nothing is one signal; the uncited verdict is the second
        "QuoteAndJudge": lambda i: {"quote": "", "verdict": "CONTRADICTED"
                                    if "Kraków" in i["claim"] else "SUPPORTED"},
        "JudgeFact": lambda i: {"verdict": "CONTRADICTED"},
        "CorrectFacts": lambda i: {"corrections": [
            {"original": f, "fixed": f.replace("Kraków", "Warsaw")}
            for f in i["erroneous_facts"]]},
        "RewriteSentence": lambda i: {"sentence": " ".join(i["facts"])},
        "PolishAnswer": lambda i: {"answer": i["draft"]},
    }
    lm, _ = scripted_lm(handlers)
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    draft = tmp_path / "draft.txt"
    draft.write_text(kraków)
    model = _always(models, tmp_path, label)
    capsys.readouterr()  # the test's own model building above
    code = main(["correct", "--question", "Tell me a bio of Marie Curie.", "--draft", str(draft),
                 "--corpus", str(EXAMPLES / "corpus"), "--json", "--quiet", "--verdicts", "fact",
                 "--verifier", f"nli={model}"])
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    assert code == 0
    assert "Loading weights" not in captured.err  # N21: --quiet holds for transformers too
    fact = next(f for f in payload["trace"]["facts"] if "Kraków" in f["text"])
    assert fact["votes"]["verifier"] == ("CONTRADICTED" if label == "contradiction"
                                         else "SUPPORTED")
    assert fact["status"] == status
    assert ("Warsaw" in payload["answer"]) == (status == "corrected")


def test_the_verifier_flag_is_refused_where_it_cannot_apply(models, capsys):
    from conftest import EXAMPLES

    from serc_dspy.cli import main

    corpus = str(EXAMPLES / "corpus")
    assert main(["ask", "Who?", "--corpus", corpus, "--method", "cove_rag",
                 "--verifier", f"nli={models['nli']}"]) == 2
    assert "--verifier applies to the SERC methods only" in capsys.readouterr().err
    assert main(["ask", "Who?", "--corpus", corpus, "--verifier", "roberta=x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("serc: error:") and "unknown verifier kind" in err
    recorded = repr(ClassifierVerifier(models["nli"]))  # what a results file records
    assert recorded == f"ClassifierVerifier({str(models['nli'])!r}, kind='nli')"


def test_a_models_own_prompt_template_is_checked_when_the_verifier_is_built(models, tmp_path):
    """N19: HHEM's config carries its prompt; a malformed one is refused at construction,
    not at every call, and a good one is the input template."""
    import json
    import shutil

    path = tmp_path / "hhem-like"
    shutil.copytree(models["binary"], path)
    config = json.loads((path / "config.json").read_text())
    config["prompt"] = "<pad> Premise: {text1}\nHypothesis: {text2} {oops}"
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserError, match="bad verifier template"):
        ClassifierVerifier(path, kind="binary", support_label=1)
    config["prompt"] = "<pad> Premise: {text1}\nHypothesis: {text2}"
    (path / "config.json").write_text(json.dumps(config))
    verifier = ClassifierVerifier(path, kind="binary", support_label=1)
    assert verifier._input_template() == config["prompt"]
