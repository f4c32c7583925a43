"""Where the main job's time goes, and what the engine settings change: README command 1
(`serc correct` on the example draft) decoded once per setting, each in a fresh process (a
cold engine cache), per stage: LM calls, prompt tokens, prompt tokens served from the engine's
cache, completion tokens, summed call seconds; then the run's wall time and the planted errors
it fixed. The settings are compared in one run, as ratios.

    python benchmarks/engine_tokens.py [--model qwen1.5b] [--config today --config new]
                                       [--busy] [--out benchmarks/measured/engine_tokens.md]

`--busy` decodes each setting twice: on the idle machine, and while a plain busy loop (started
and stopped here) keeps one core taken. A setting is `today`, `new`, or a name followed by
`:key=value,...` over `today` (`--config t1:threads=1`). Keys: `threads` (llama.cpp worker
threads; default every core), `poll` (llama.cpp's busy-wait level 0-100), and `flags` (extra
`serc correct` options, `;` for a space: `flags=--evidence-window;3`). Not part of the test
run: it decodes with a real model for minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

PRESETS = {
    "today": {"threads": None, "poll": 50, "flags": ""},
    "new": {"threads": None, "poll": 50, "flags": ""},
}
"""`today` is the release before the token work; `new` is what this release ships."""


def parse_setting(text: str) -> tuple[str, dict]:
    name, _, overrides = text.partition(":")
    setting = dict(PRESETS.get(name, PRESETS["today"]))
    for pair in filter(None, overrides.split(",")):
        key, _, value = pair.partition("=")
        if key not in setting:
            raise SystemExit(f"unknown setting key {key!r} in {text!r} (keys: "
                             f"{', '.join(setting)})")
        setting[key] = value.replace(";", " ") if key == "flags" else int(value)
    return name, setting


def spin() -> None:
    """A plain busy loop: one core taken by another process."""
    while True:
        pass


def planted_fixed(answer: str) -> list[bool]:
    """Each planted error of examples/draft_errors.json fixed: some sentence of the answer
    states the right detail (the right phrase's own words and the numbers both phrases share)
    and none still states the wrong one. A sentence is the unit, so "Chemistry" in the true
    1911 prize does not count against the fixed 1903 one."""
    from serc_dspy.core.text import split_sentences, words

    sentences = [set(words(sentence)) for sentence in split_sentences(answer)]
    fixed = []
    for error in json.loads((EXAMPLES / "draft_errors.json").read_text()):
        wrong, right = set(words(error["wrong"])), set(words(error["right"]))
        numbers = {word for word in wrong & right if word[0].isdigit()}

        def stated(own, numbers=numbers):
            return any(own | numbers <= sentence for sentence in sentences)

        fixed.append(stated(right - wrong) and not stated(wrong - right))
    return fixed


def child(model: str, setting: dict, result_path: Path) -> None:
    """One decoding of the main job in this process, its figures written to `result_path`."""
    from serc_dspy import cli
    from serc_dspy.backends import embedded
    from serc_dspy.core.trace import Trace
    from serc_dspy.runtime.cpu import default_threads

    plain = embedded.LlamaServerEngine.__init__

    def with_setting(self, *args, **kwargs):
        kwargs.setdefault("poll", setting["poll"])
        kwargs.setdefault("n_threads", setting["threads"])
        plain(self, *args, **kwargs)

    embedded.LlamaServerEngine.__init__ = with_setting
    trace_path = result_path.with_suffix(".trace.json")
    argv = ["correct", "--lm", model, "--question",
            (EXAMPLES / "question.txt").read_text().strip(), "--draft",
            str(EXAMPLES / "draft.txt"), "--corpus", str(EXAMPLES / "corpus"), "--trace",
            str(trace_path), "--quiet", *shlex.split(setting["flags"])]
    started = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()) as answer:
        code = cli.main(argv)
    wall = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"serc correct failed (exit {code}) for {setting}")
    trace = Trace.model_validate_json(trace_path.read_text())
    steps = {name: usage.model_dump() for name, usage in trace.usage.steps.items()}
    result_path.write_text(json.dumps({
        "wall_s": wall, "steps": steps, "total": trace.usage.total.model_dump(),
        "fixed": planted_fixed(answer.getvalue()), "answer": answer.getvalue().strip(),
        "rulings": [f"{r.rule} {r.node}: {r.before} -> {r.after}" for r in trace.rulings],
        "statuses": {f.id: f.status for f in trace.facts},
        "threads": default_threads()}))  # the process's choice, not sampled again


def decode(model: str, name: str, setting: dict, busy: bool) -> dict:
    """Run `child` in a fresh interpreter (a cold engine cache), with a busy core if asked."""
    spinner = multiprocessing.Process(target=spin, daemon=True) if busy else None
    if spinner:
        spinner.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            result = Path(folder) / "result.json"
            env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
            if setting["threads"]:
                env["SERC_THREADS"] = str(setting["threads"])
            subprocess.run([sys.executable, __file__, "--child", json.dumps(setting),
                            "--model", model, "--result", str(result)], check=True, env=env)
            figures = json.loads(result.read_text())
    finally:
        if spinner:
            spinner.terminate()
            spinner.join()
    figures.update(name=name, busy=busy, setting=setting)
    return figures


def uncached(usage: dict) -> int:
    return usage["prompt_tokens"] - usage["cached_prompt_tokens"]


def table(run: dict) -> list[str]:
    head = (f"### {run['name']} ({'one core busy' if run['busy'] else 'idle'}): "
            f"{run['wall_s']:.0f} s wall, planted errors fixed "
            f"{sum(run['fixed'])}/{len(run['fixed'])}")
    rows = [head, "", f"setting: `{json.dumps(run['setting'])}`, engine threads: "
            f"{run.get('threads', '?')}", "",
            "| stage | calls | prompt | cached | uncached | completion | call s |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for stage, usage in sorted(run["steps"].items()) + [("**total**", run["total"])]:
        rows.append(f"| {stage} | {usage['calls']} | {usage['prompt_tokens']:,} | "
                    f"{usage['cached_prompt_tokens']:,} | {uncached(usage):,} | "
                    f"{usage['completion_tokens']:,} | {usage['seconds']:.0f} |")
    return rows + ["", "answer:", "", *(f"> {line}" for line in run["answer"].splitlines()),
                   ""]


def ratio_lines(runs: list[dict]) -> list[str]:
    idle = {run["name"]: run for run in runs if not run["busy"]}
    busy = {run["name"]: run for run in runs if run["busy"]}
    base = runs[0]["name"]
    lines = []
    for name, run in idle.items():
        if name == base:
            continue
        now, then = run["total"], idle[base]["total"]

        def share(key, now=now, then=then):
            return now[key] / max(1, then[key])

        lines.append(f"ratio {name}/{base} (idle): uncached prompt tokens "
                     f"{uncached(now) / max(1, uncached(then)):.2f}x, prompt tokens "
                     f"{share('prompt_tokens'):.2f}x, completion tokens "
                     f"{share('completion_tokens'):.2f}x, wall "
                     f"{run['wall_s'] / idle[base]['wall_s']:.2f}x")
    for name, run in busy.items():
        if name in idle:
            lines.append(f"ratio {name} busy/idle: wall "
                         f"{run['wall_s'] / idle[name]['wall_s']:.2f}x")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen1.5b")
    parser.add_argument("--config", action="append", default=None, metavar="SETTING")
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.model, json.loads(args.child), args.result)
        return
    settings = [parse_setting(text) for text in args.config or ["today", "new"]]
    runs = []
    for busy in ([False, True] if args.busy else [False]):
        for name, setting in settings:
            print(f"decoding {name} ({'busy' if busy else 'idle'})...", file=sys.stderr)
            runs.append(decode(args.model, name, setting, busy))
            if args.out:  # each run kept as it ends: a long busy run may be stopped
                kept = args.out.with_name(f"{args.out.stem}-{name}-{'busy' if busy else 'idle'}"
                                          ".json")
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_text(json.dumps(runs[-1], indent=2) + "\n")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    report = [f"# engine_tokens: {args.model}, {when}", ""]
    for run in runs:
        report += table(run)
    report += ratio_lines(runs)
    text = "\n".join(report)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
