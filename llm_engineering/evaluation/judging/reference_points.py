"""A reference's points, the checklist items a right answer states (`judging.checklist`): its list entries where it is
written as a numbered or bulleted list, else its sentences.

- A list (`1. ...`, `2) ...`, `- ...`, `* ...`, `• ...`, one entry a line, or numbered 1, 2, 3 ... inside one paragraph)
  gives one item per entry, its marker dropped; a line that continues an entry stays in it, and the text before the
  first entry is read as sentences (the one that opens the list, ending in a colon, dropped).
- A sentence of one or two words ("In short:", "Yes.") is no point on its own: it is joined to the sentence after it
  (the one before, at the end), and dropped where it only opens a list ("Steps:"); a bare marker or number ("2.") is
  dropped. A reference of fragments alone is one item.
- More points than `max_items`: consecutive points are joined into `max_items` items of as even a count as can be (8
  sentences into 6 items: two of two sentences, four of one), so every point is graded and none drowns in one long
  last item.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_LINE_MARKER = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•+])\s+")
# A number that opens an entry inside a paragraph: `1. `, `2) `, at the start or after a space.
_INLINE_NUMBER = re.compile(r"(?:^|(?<=\s))(\d{1,2})[.)]\s+")
_BARE = re.compile(r"^(?:\d{1,2}[.)]?|[-*•+])$")
FRAGMENT_WORDS = 2  # a sentence of this many words or fewer is joined to its neighbour


def _words(text: str) -> int:
    return len(re.findall(r"\w+", text))


def _sentences(text: str, keep_fragments: bool = True) -> list[str]:
    """`text`'s sentences, bare markers dropped and sentences of one or two words joined to their neighbour (where it
    has no other sentence: kept as one item if `keep_fragments`, else dropped)."""
    pieces = [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]
    pieces = [p for p in pieces if not _BARE.match(p)]
    out: list[str] = []
    carried = ""  # fragments waiting for the next sentence
    for piece in pieces:
        piece = f"{carried} {piece}".strip()
        if _words(piece) <= FRAGMENT_WORDS:
            carried = piece
            continue
        out.append(piece)
        carried = ""
    if carried:  # fragments at the end join the sentence before them, or stand alone where there is none
        out = out[:-1] + [f"{out[-1]} {carried}"] if out else [carried] if keep_fragments else []
    return out


def _line_entries(reference: str) -> tuple[str, list[str]]:
    """(the text before the list, the list's entries) of a reference whose lines start with list markers; no entries
    where fewer than two lines do."""
    lines = reference.splitlines()
    if sum(bool(_LINE_MARKER.match(line)) for line in lines) < 2:
        return reference, []
    before: list[str] = []
    entries: list[str] = []
    for line in lines:
        if _LINE_MARKER.match(line):
            entries.append(_LINE_MARKER.sub("", line, count=1))
        elif entries:
            entries[-1] += " " + line
        else:
            before.append(line)
    return "\n".join(before), entries


def _inline_entries(reference: str) -> tuple[str, list[str]]:
    """(the text before the list, its entries) of a paragraph that numbers its points 1, 2, 3 ...; no entries where it
    does not number at least two in order from 1."""
    text = " ".join(reference.split())
    starts, expected = [], 1
    for match in _INLINE_NUMBER.finditer(text):
        if int(match.group(1)) == expected:
            starts.append(match)
            expected += 1
    if len(starts) < 2:
        return reference, []
    ends = [m.start() for m in starts[1:]] + [len(text)]
    return text[:starts[0].start()], [text[m.end():end] for m, end in zip(starts, ends)]


def _spread(points: list[str], max_items: int) -> list[str]:
    """`points` joined into at most `max_items` items of consecutive points, as even in count as can be."""
    n = len(points)
    if n <= max_items:
        return points
    return [" ".join(points[n * k // max_items:n * (k + 1) // max_items]) for k in range(max_items)]


def reference_points(reference: str, max_items: int) -> list[str]:
    """The reference's points in order, at most `max_items` (the rules: module doc)."""
    before, entries = _line_entries(reference)
    if not entries:
        before, entries = _inline_entries(reference)
    entries = [" ".join(e.split()) for e in entries]
    opening = _sentences(before, keep_fragments=not entries)
    if entries and opening and opening[-1].endswith(":"):  # "The steps are:" opens the list, the entries are its points
        opening = opening[:-1]
    points = opening + [e for e in entries if e and not _BARE.match(e)]
    return _spread(points, max_items)
