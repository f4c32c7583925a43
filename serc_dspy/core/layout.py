"""The draft's layout: which parts are prose to decode, and what stays exactly where it was.

A decoder that splits a draft into sentences and joins them back with spaces flattens it:
paragraph breaks, list lines and code blocks (whose indentation is their meaning) are lost
even when every fact is kept. `Layout.parse` cuts a draft into blocks:

- **raw**: blank lines, fenced code blocks (``` or ~~~), indented code (4 spaces or a tab
  after a blank line), headings (`# ...`) and table rows (`| ...`): never decoded, given back
  byte for byte;
- **prose**: a paragraph, or one list item (its marker, "- " or "2. ", kept as a prefix): its
  sentences are what the decoder sees, and `rebuild` puts each decoded sentence back in its
  block. A block whose sentences all come back unchanged is given back verbatim, line wraps
  included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from serc_dspy.core.text import is_wide, split_sentences

_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^(\s*(?:[-*•+]|\d{1,3}[.)])\s+)(?=\S)")
_RAW_LINE = re.compile(r"^\s*(?:#{1,6}\s|\|)")
_CODE_INDENT = re.compile(r"^(?: {4}|\t)")


@dataclass
class Block:
    kind: str  # "raw" or "prose"
    text: str
    prefix: str = ""
    sentences: list[int] = field(default_factory=list)


@dataclass
class Layout:
    blocks: list[Block]
    sentences: list[str]

    @property
    def flat(self) -> bool:
        """One prose paragraph and nothing else: joining sentences with spaces loses nothing."""
        prose = [b for b in self.blocks if b.kind == "prose"]
        raw = [b for b in self.blocks if b.kind == "raw" and b.text.strip()]
        return len(prose) <= 1 and not raw and not any(b.prefix for b in prose)

    @classmethod
    def parse(cls, text: str, *, deadline: float | None = None) -> Layout:
        """`deadline` (a `time.monotonic()` value) bounds the sentence splitting: past it,
        `TimeoutError` (see `text.split_sentences`)."""
        blocks: list[Block] = []
        lines = (text or "").splitlines(keepends=True)
        fence: str | None = None
        prose: list[str] = []
        prefix = ""

        def close_prose() -> None:
            nonlocal prose, prefix
            if prose:
                body = "".join(prose)
                stripped = body.rstrip("\r\n")
                blocks.append(Block("prose", stripped, prefix))
                if len(body) > len(stripped):
                    blocks.append(Block("raw", body[len(stripped):]))
            prose, prefix = [], ""

        previous_blank = True
        for line in lines:
            if fence is not None:
                blocks.append(Block("raw", line))
                if _FENCE.match(line) and line.strip().startswith(fence):
                    fence = None
                continue
            fenced = _FENCE.match(line)
            blank = not line.strip()
            item = _LIST_ITEM.match(line)
            if fenced or blank or _RAW_LINE.match(line) or \
                    (_CODE_INDENT.match(line) and previous_blank and not prose):
                close_prose()
                blocks.append(Block("raw", line))
                fence = fenced.group(1) if fenced else None
            elif item:
                close_prose()
                prefix, prose = item.group(1), [line[item.end():]]
            else:
                prose.append(line)
            previous_blank = blank
        close_prose()
        sentences: list[str] = []
        for block in blocks:
            if block.kind == "prose":
                found = split_sentences(block.text, deadline=deadline)
                block.sentences = list(range(len(sentences), len(sentences) + len(found)))
                sentences.extend(found)
        return cls(_merge_raw(blocks), sentences)

    def _gaps(self, block: Block) -> list[str]:
        """What follows each of a block's sentences before the next one in the draft (a space,
        two, a line break, or nothing between CJK sentences), so a rebuilt block keeps the
        draft's own spacing; a space where the sentences cannot be found."""
        originals = [self.sentences[i] for i in block.sentences]
        pos, ends = 0, []
        for sentence in originals:
            at = block.text.find(sentence, pos)
            if at < 0:
                return [_gap_default(t) for t in originals]
            ends.append((at, at + len(sentence)))
            pos = at + len(sentence)
        return [block.text[end:ends[k + 1][0]] if k + 1 < len(ends) else ""
                for k, (_, end) in enumerate(ends)]

    def rebuild(self, texts: list[str]) -> str:
        """The draft with sentence `i` replaced by `texts[i]` (an empty text drops it), every
        raw block, list marker and line break where it was."""
        out: list[str] = []
        for block in self.blocks:
            if block.kind == "raw":
                out.append(block.text)
                continue
            new = [texts[i] for i in block.sentences]
            if new == [self.sentences[i] for i in block.sentences]:
                out.append(block.prefix + block.text)
                continue
            gaps = self._gaps(block)
            kept = [(t.strip(), gaps[k]) for k, t in enumerate(new) if t and t.strip()]
            body = "".join(text + (gap if n < len(kept) - 1 else "")
                           for n, (text, gap) in enumerate(kept))
            if body:
                out.append(block.prefix + body)
        return "".join(out)


def _gap_default(text: str) -> str:
    return "" if text and is_wide(text[-1]) else " "


def _merge_raw(blocks: list[Block]) -> list[Block]:
    merged: list[Block] = []
    for block in blocks:
        if block.kind == "raw" and merged and merged[-1].kind == "raw":
            merged[-1].text += block.text
        else:
            merged.append(block)
    return merged
