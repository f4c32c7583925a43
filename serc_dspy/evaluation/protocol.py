"""The quality protocol: which data a rule or a prompt may be tuned on, which is only ever
scored, and what every measured run records about itself (commit, command, split).

- Tuning split: `wikipedia_dev.json` and Factcheck-Bench items 1-25. Read its traces while
  developing; its figures are never a quality claim.
- Report split: `wikipedia_report.json` and Factcheck-Bench items 26-50. Only scored.

`benchmarks/README.md` states the protocol for people; this module labels each run with the
split it belongs to, so a results file says by itself whether its figures may be quoted.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from serc_dspy.core.errors import redact

FACTCHECK_TUNING = range(1, 26)
"""Factcheck-Bench items (1-based, in file order) that rules and prompts may be tuned on."""
FACTCHECK_REPORT = range(26, 51)
REPORT_ARTICLES = "wikipedia_report"
TUNING_ARTICLES = "wikipedia_dev"


def split_of_articles(path: str) -> str:
    """`report`, `tuning` or `other` for a planted-error article file, by its name."""
    name = Path(str(path)).stem
    if name.startswith(REPORT_ARTICLES):
        return "report"
    if name.startswith(TUNING_ARTICLES):
        return "tuning"
    return "other"


def split_of_items(numbers: list[int]) -> str:
    """`tuning`, `report` or `mixed` for a set of Factcheck-Bench item numbers (1-based)."""
    kinds = {"tuning" if n in FACTCHECK_TUNING else "report" if n in FACTCHECK_REPORT
             else "other" for n in numbers}
    return kinds.pop() if len(kinds) == 1 else "mixed"


def current_commit() -> str | None:
    """The source tree's git commit (with `+dirty` when it has uncommitted changes), or None
    outside a git checkout: a measured run records the code it measured."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no", "--", "serc_dspy"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


_command: list[str] | None = None


def record_command(argv: list[str] | None) -> None:
    """The CLI tells which `serc` command runs (its argv may differ from the process's)."""
    global _command
    _command = ["serc", *(argv if argv is not None else sys.argv[1:])]


def current_command() -> str:
    """The `serc` command line being run (else the process's), secrets redacted."""
    argv = _command or [Path(sys.argv[0]).name, *sys.argv[1:]]
    return redact(shlex.join(argv))


def provenance() -> dict[str, str | None]:
    return {"commit": current_commit(), "command": current_command()}
