"""Relative links in the project's Markdown resolve: README.md and every tracked Markdown file
under docs/, benchmarks/, examples/ and serc_dspy/. A link `[text](path)` must name an existing
file or folder (relative to the linking file); `[text](path#anchor)` into a Markdown file, or
`[text](#anchor)` within one, must match a heading's GitHub-style slug. http(s) and mailto links
are not checked (nothing may be fetched in a test)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("docs", "benchmarks", "examples", "serc_dspy")

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target) and ![alt](target), an optional "title" after the target
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"          # [text], one level of nested brackets
    r"\(\s*<?([^\s)>]+)>?(?:\s+\"[^\"]*\")?\s*\)")  # (target "title")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+[^>]*(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
SKIPPED_SCHEMES = ("http://", "https://", "mailto:")


def markdown_files() -> list[Path]:
    """README.md and the tracked Markdown files under FOLDERS (every one on disk without git)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", "README.md", *(f"{f}/*.md" for f in FOLDERS)],
            cwd=REPO, capture_output=True, check=True, timeout=60).stdout.decode()
        files = [REPO / name for name in listed.split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        files = [REPO / "README.md"] + [p for f in FOLDERS for p in (REPO / f).rglob("*.md")]
    # a file staged for deletion is still listed by git ls-files: check what is on disk
    return sorted({p for p in files if p.is_file()})


def outside_fences(text: str) -> list[tuple[int, str]]:
    """(line number, line) for every line outside fenced code blocks."""
    lines, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
        elif fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
        else:
            lines.append((number, line))
    return lines


def prose_lines(text: str) -> list[tuple[int, str]]:
    """Lines outside fenced code blocks, with inline code spans blanked out."""
    return [(number, INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line))
            for number, line in outside_fences(text)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the text (links reduced to their text, tags dropped),
    lower-cased, every character but letters, digits, underscores, hyphens and spaces removed,
    each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def file_anchors(path: Path) -> set[str]:
    """Every anchor a Markdown file defines: heading slugs (a repeated one gets -1, -2, ... as
    on GitHub) and explicit <a name=...> / id=... anchors."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in outside_fences(path.read_text(encoding="utf-8")):
        found.update(HTML_ANCHOR.findall(line))
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    found = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        found += [(number, target) for target in INLINE_LINK.findall(line)]
        match = REFERENCE_DEF.match(line)
        if match:
            found.append((number, match.group(1)))
    return found


def broken_links(path: Path) -> list[str]:
    problems = []
    for number, target in links(path):
        if target.lower().startswith(SKIPPED_SCHEMES):
            continue
        where = f"{path.relative_to(REPO)}:{number}: ({target})"
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            problems.append(f"{where} is neither relative nor http(s)/mailto")
            continue
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not destination.exists():
            problems.append(f"{where} names a missing file")
            continue
        if anchor and destination.suffix.lower() == ".md":
            if unquote(anchor).lower() not in file_anchors(destination):
                problems.append(f"{where} names no heading of {destination.relative_to(REPO)}")
    return problems


FILES = markdown_files()


def test_the_checked_files_include_the_readme_and_the_docs():
    names = {p.relative_to(REPO).as_posix() for p in FILES}
    assert "README.md" in names
    assert any(name.startswith("docs/") for name in names)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve(path):
    assert broken_links(path) == []


def test_slugs_follow_github():
    assert slug("Cost and speed against the official code") == \
        "cost-and-speed-against-the-official-code"
    assert slug("A classifier verifier (`serc_dspy/verifiers.py`)") == \
        "a-classifier-verifier-serc_dspyverifierspy"
    assert slug("SGLang (the paper's setup: one GPU, Qwen2.5-14B-Instruct)") == \
        "sglang-the-papers-setup-one-gpu-qwen25-14b-instruct"
    assert slug("Kim / Kimberly") == "kim--kimberly"


def test_the_checker_catches_a_broken_link_and_anchor(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    (tmp_path / "a.md").write_text("# Title\n\n## Two words\n\n## Two words\n")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md) [ok](a.md#two-words) [ok](a.md#two-words-1) [ok](#here) [web](https://x.y/z)\n"
        "# Here\n"
        "[bad](missing.md) [bad](a.md#nowhere) `[code](not-a-link.md)`\n"
        "```\n[fenced](not-a-link-either.md)\n```\n")
    problems = broken_links(page)
    assert len(problems) == 2, problems
    assert "missing.md" in problems[0] and "a.md#nowhere" in problems[1]


PLACEHOLDER = re.compile(r"\b(?:TODO|TBD|FIXME|XXX|PENDING|MAINWALL)\b")
"""Words a draft of a page leaves where a figure or a sentence is still to come."""


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_page_keeps_a_placeholder_for_a_figure(path):
    # the case that motivated it: a table of docs/measurements.md shipped with "MAINWALL"
    # where the main job's wall time belonged
    found = [f"{path.name}:{n}: {m.group(0)}" for n, line in enumerate(
        path.read_text(encoding="utf-8").splitlines(), 1) for m in PLACEHOLDER.finditer(line)]
    assert not found, found
