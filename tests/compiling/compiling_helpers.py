"""Shared pieces for the compiling tests: a demo-aware scripted LM and tiny data files.

(A module, not a conftest.py: a second `conftest` module would shadow tests/conftest.py for
`from conftest import ...` elsewhere in the suite.)

The scripted LM of tests/scripted.py answers from the current input only. Compilation changes
a predictor's *demos*, so these handlers also see the demos of the request (JSONAdapter sends
them as user/assistant message pairs before the current input): without demos they answer
naively, with demos they follow the closest demo. That makes "compiling helped" observable.
"""

from __future__ import annotations

import json
import threading

import dspy
from scripted import _FIELD, ScriptedEngine, _parse_value


def _words(text: str) -> set[str]:
    return {w.strip(".,").lower() for w in str(text).split() if len(w) > 3}


class DemoAwareEngine(ScriptedEngine):
    """ScriptedEngine whose handlers get `inputs["_demos"]`: [(demo inputs, demo outputs)]."""

    def __init__(self, handlers):
        self.local = threading.local()
        self.demos_seen: list[int] = []
        super().__init__({name: self._wrap(handler) for name, handler in handlers.items()})

    def _wrap(self, handler):
        return lambda inputs: handler({**inputs, "_demos": getattr(self.local, "demos", [])})

    def complete(self, request):
        demos = []
        messages = list(request.messages)[:-1]
        for user, assistant in zip(messages[::2], messages[1::2], strict=False):
            inputs = {k: _parse_value(v) for k, v in _FIELD.findall(user.text or "")}
            try:
                outputs = json.loads(assistant.text or "{}")
            except json.JSONDecodeError:
                outputs = {}
            demos.append((inputs, outputs))
        with self._lock:
            self.demos_seen.append(len(demos))
        self.local.demos = demos
        return super().complete(request)


def closest_demo(demos, text: str, field: str):
    """The demo whose `field` shares the most words with `text` (None without demos)."""
    if not demos:
        return None
    return max(demos, key=lambda d: len(_words(d[0].get(field, "")) & _words(text)))


def judge(inputs):
    demo = closest_demo(inputs["_demos"], inputs["claim"], "claim")
    if inputs["claim"].startswith("BROKEN"):
        raise ValueError("scripted failure")
    return {"verdict": demo[1]["verdict"] if demo else "SUPPORTED"}


def split_facts(inputs):
    sentence = inputs["sentence"]
    if not inputs["_demos"]:
        return {"facts": [sentence]}
    return {"facts": [part.strip(" .") + "." for part in sentence.split(" and ")]}


def correct(inputs):
    facts = inputs["erroneous_facts"]
    if not inputs["_demos"]:
        return {"corrections": [{"original": f, "fixed": f} for f in facts]}
    first = inputs["evidence"].split(". ")[0].rstrip(".") + "."
    return {"corrections": [{"original": f, "fixed": first} for f in facts]}


def cited_judge(inputs):
    return {"quote": "", **judge(inputs)}


def choose_first(inputs: dict) -> dict:
    """The first option, always (a small model's position bias)."""
    return {"choice": "A"}


HANDLERS = {"JudgeFact": judge, "QuoteAndJudge": cited_judge, "AtomicFacts": split_facts,
            "CorrectFacts": correct, "ChooseValue": choose_first}


def demo_lm(handlers=None, name="demo-aware"):
    engine = DemoAwareEngine(dict(handlers or HANDLERS))

    class _Async:
        async def complete(self, request):
            return engine.complete(request)

    lm = dspy.LM(f"local/{name}", engine=engine, async_engine=_Async(), cache=False,
                 temperature=0.0, max_tokens=512)
    return lm, engine


# -- tiny data in the real files' layouts --------------------------------------------------------
TOPICS = {"SUPPORTED": "alpha", "CONTRADICTED": "beta", "NOT_FOUND": "gamma"}
STANCES = {"SUPPORTED": "completely-support", "CONTRADICTED": "refute",
           "NOT_FOUND": "irrelevant"}


def stance_rows(per_label: int = 8) -> list[dict]:
    rows = []
    for label, word in TOPICS.items():
        for i in range(per_label):
            rows.append({"claim": f"The {word} comet number {i} orbits the {word} star.",
                         "evidence": f"Passage {i} about the {word} comet and its {word} orbit.",
                         "stance": STANCES[label]})
    rows.append({"claim": "The delta comet is bright.", "evidence": "Delta is bright-ish.",
                 "stance": "partially-support"})
    return rows


def write_jsonl(path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def factscore_rows(n_topics: int = 10) -> list[dict]:
    rows = []
    for t in range(n_topics):
        topic = f"Person {t}"
        facts = [{"text": f"{topic} was a painter.", "label": "S"},
                 {"text": f"{topic} lived in Rome.", "label": "S"}]
        rows.append({"topic": topic, "input": f"Question: Tell me a bio of {topic}.",
                     "output": "...", "annotations": [
                         {"text": f"{topic} was a painter and {topic} lived in Rome.",
                          "is-relevant": True, "human-atomic-facts": facts},
                         {"text": "Thanks for asking.", "is-relevant": False,
                          "human-atomic-facts": None},
                     ]})
    rows.append({"topic": "Nobody", "input": "Question: Tell me a bio of Nobody.",
                 "output": "I have no information.", "annotations": None})
    return rows


def correction_rows(n: int = 10) -> tuple[list[dict], list[dict], list[dict]]:
    claims, stances, benchmark = [], [], []
    for i in range(n):
        claim = f"Bridge {i} was opened in 18{i}0."
        revised = f"Bridge {i} was opened in 19{i}5."
        claims.append({"claim": claim, "label": "false", "revised_claim": revised})
        stances.append({"claim": claim, "evidence": f"Bridge {i} was opened in 19{i}5. It spans "
                        "a river.", "stance": "refute"})
        stances.append({"claim": claim, "evidence": "Unrelated text.", "stance": "irrelevant"})
    claims.append({"claim": "Bridges are made of stone.", "label": "true",
                   "revised_claim": "Bridges are made of stone."})
    claims.append({"claim": "Towers fly.", "label": "false", "revised_claim": "Towers stand."})
    stances.append({"claim": "Towers fly.", "evidence": "Nothing here.", "stance": "irrelevant"})
    benchmark.append({"prompt": "When was Bridge 0 opened?", "sentences": {
        "sentence1": {"claims": [claims[0]["claim"]]}}})
    return claims, stances, benchmark


def make_data_dir(tmp_path):
    """A folder laid out like the shared data: factcheck_gpt/ and factscore/labeled_dev/."""
    root = tmp_path / "data"
    claims, stances, benchmark = correction_rows()
    write_jsonl(root / "factcheck_gpt" / "subtask3_claim_evidence_stance_dev.jsonl",
                stance_rows() + stances)
    write_jsonl(root / "factcheck_gpt" / "subtask4_claim_factuality_dev.jsonl", claims)
    write_jsonl(root / "factcheck_gpt" / "benchmark_dev.jsonl", benchmark)
    write_jsonl(root / "factscore" / "labeled_dev" / "ChatGPT.jsonl", factscore_rows())
    (root / "factscore_wiki").mkdir(parents=True)
    (root / "factscore_wiki" / "wikipedia_dev.json").write_text(json.dumps({
        f"Ada Brook {i}": f"Ada Brook {i} (born 190{i}) was an English chemist. She moved to "
                          f"Leeds in 192{i}, and in 193{i} she took the chair of chemistry at "
                          f"Leeds. She died in 197{i}." for i in range(8)}), encoding="utf-8")
    return root


class FirstDemo(dspy.teleprompt.Teleprompter):
    """A user's own teleprompter, loaded by import path: the first train example as a demo."""

    def __init__(self, metric=None):
        self.metric = metric

    def compile(self, student, *, trainset, **kwargs):
        program = student.deepcopy()
        for _, predictor in program.named_predictors():
            predictor.demos = [trainset[0]]
        return program
