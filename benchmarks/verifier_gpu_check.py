"""Check the classifier verifier on a GPU: bfloat16 by default, batched, and how fast.

    python benchmarks/verifier_gpu_check.py [--model DIR_OR_ID] [--batch-size 64]
        [--claims 256] [--passages 24] [--allow-cpu]

Without `--model` it builds a small random BERT-style NLI classifier (word-level tokenizer,
4 layers, hidden 256) in a temporary folder, so nothing is downloaded; its verdicts mean
nothing, only the mechanics and the speed do. It checks that the model sits on CUDA in
bfloat16, that the pairs went through in batches of `--batch-size`, that concurrent `averify`
calls give the same verdicts as `verify`, and how far bfloat16 scores are from float32 ones on
the same inputs; then prints the device, dtype, pairs/s and peak GPU memory. Exits 0 with a
message when torch sees no CUDA device (`--allow-cpu` runs the same checks on the CPU in
float32, to try the script). Not part of the test run.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("Marie Curie was born in Warsaw in 1867 and moved to Paris in 1891 where she studied "
         "physics and chemistry at the Sorbonne with Pierre Curie whom she married in 1895 they "
         "discovered polonium and radium and shared the Nobel Prize in Physics in 1903 she won "
         "a second Nobel Prize in Chemistry in 1911 and died in 1934 in Passy").split()


def build_tiny_nli(folder: Path, hidden: int = 256, layers: int = 4) -> Path:
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([" ".join(WORDS) + " ."],
                            trainers.WordLevelTrainer(special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, model_max_length=512, unk_token="[UNK]", pad_token="[PAD]",
        cls_token="[CLS]", sep_token="[SEP]")
    labels = {0: "entailment", 1: "neutral", 2: "contradiction"}
    config = transformers.BertConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=4, intermediate_size=4 * hidden, max_position_embeddings=512,
        num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()})
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def synthetic(claims: int, passages: int) -> tuple[list[str], list[str]]:
    def text(seed: int, n: int) -> str:
        return " ".join(WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(n))

    evidence = [". ".join(text(p * 5 + s, 18) for s in range(6)) + "." for p in range(passages)]
    return [text(1000 + c, 10) + "." for c in range(claims)], evidence


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="a local model directory or cached hub id (default: "
                        "a small random NLI model built here)")
    parser.add_argument("--kind", default="auto")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--claims", type=int, default=256)
    parser.add_argument("--passages", type=int, default=24)
    parser.add_argument("--allow-cpu", action="store_true",
                        help="run the checks on the CPU when there is no CUDA device")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to check (pip install torch, then "
              "pip install 'serc-dspy[hf]')")
        return 0
    cuda = torch.cuda.is_available()
    if not cuda and not args.allow_cpu:
        print("no CUDA device: this check needs a GPU, skipping (--allow-cpu to try it on the "
              "CPU)")
        return 0

    from serc_dspy.verifiers import ClassifierVerifier, chunk_evidence

    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or str(build_tiny_nli(Path(tmp) / "tiny-nli"))
        verifier = ClassifierVerifier(model, kind=args.kind, batch_size=args.batch_size)
        expected = ("cuda", "bfloat16") if cuda else ("cpu", "float32")
        started = time.perf_counter()
        _, net = verifier.load()
        param = next(net.parameters())
        print(f"model {verifier.name} ({verifier.kind}), loaded in "
              f"{time.perf_counter() - started:.2f}s: device {param.device}, dtype {param.dtype}"
              f", max_length {verifier.max_length}")
        if param.device.type != expected[0] or str(param.dtype) != f"torch.{expected[1]}":
            failures.append(f"expected {expected[0]} {expected[1]}, got {param.device} "
                            f"{param.dtype}")
        if cuda:
            print(f"gpu {torch.cuda.get_device_name(param.device)}")

        sizes: list[int] = []
        forward = net.forward

        def counted(*a, **k):
            sizes.append(k["input_ids"].shape[0])
            return forward(*a, **k)

        net.forward = counted
        claims, evidence = synthetic(args.claims, args.passages)
        chunks = len(chunk_evidence(evidence, verifier.chunk_words))
        verifier.verify(claims[:4], evidence[:2])  # warm-up (kernels, allocator)
        sizes.clear()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        started = time.perf_counter()
        verdicts = verifier.verify(claims, evidence)
        if cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        pairs = len(claims) * chunks
        print(f"{len(claims)} claims x {chunks} chunks = {pairs} pairs in {len(sizes)} batches "
              f"(largest {max(sizes)}) in {seconds:.3f}s: {pairs / seconds:,.0f} pairs/s, "
              f"{len(claims) / seconds:,.1f} claims/s")
        if max(sizes) > args.batch_size or sum(sizes) != pairs:
            failures.append(f"batches {sizes} do not cover {pairs} pairs in batches of "
                            f"{args.batch_size}")
        if cuda:
            print(f"peak GPU memory {torch.cuda.max_memory_allocated() / 2**20:,.0f} MiB")
        counts = {v: sum(d.verdict == v for d in verdicts)
                  for v in ("SUPPORTED", "CONTRADICTED", "NOT_FOUND")}
        print(f"verdicts (a random model's: meaningless) {counts}")

        async def concurrently():
            half = len(claims) // 2
            return await asyncio.gather(verifier.averify(claims[:half], evidence),
                                        verifier.averify(claims[half:], evidence))

        first, second = asyncio.run(concurrently())
        if [v.verdict for v in first + second] != [v.verdict for v in verdicts]:
            failures.append("concurrent averify calls gave other verdicts than verify")

        if cuda and verifier.resolved_dtype != "float32":
            reference = ClassifierVerifier(model, kind=args.kind, batch_size=args.batch_size,
                                           dtype="float32")
            exact = reference.verify(claims, evidence)
            gap = max(abs(a.support - b.support) for a, b in zip(verdicts, exact, strict=True))
            same = sum(a.verdict == b.verdict for a, b in zip(verdicts, exact, strict=True))
            print(f"bfloat16 vs float32: largest support gap {gap:.4f}, same verdict for "
                  f"{same}/{len(exact)} claims")
            reference.close()
        verifier.close()
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
