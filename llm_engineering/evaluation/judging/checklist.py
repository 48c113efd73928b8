"""Checklist verdicts: a row's reference broken into items (the points a right answer states), each item answered
by the judge in one token, yes or no, read as a probability (RocketEval, ICLR 2025; TICK; InFoBench's DRFR).

- Items: once per row, the reference's points (`judging.reference_points`: its list entries, or its sentences; asked
  to list the points, the 1.5B judge copied the sentences in 6 of 8 rows, at 7 s a row of decoding), or written by a
  model (the judge, or a stronger one: `checklists.writer`) from the instruction and the reference, and from the
  instruction alone where a row has no reference (what it asks for); or given by the dataset's `checklist` column.
  Each list is cleaned (`clean_items`): an empty item, a repeat, a copy of the whole reference or one past
  `max_items` is dropped with its reason. Each row keeps where its items came from (`checklist_writing`).
- Grading: one prompt per item, the item last, so every item of one answer shares the prompt's prefix (vLLM's prefix
  cache computes it once); the reply is one token (the in-process judge holds it to Yes or No), and the item's
  probability is P(Yes) / (P(Yes) + P(No)) from that token's candidates (`yes_probability`), where Yes and No hold at
  least `YES_NO_FLOOR` of them; else the item is unread, kept with that mass. No analysis is decoded.
- The score (`checklist_score`): the scale's lowest level plus its range times the mean of the read items'
  probabilities (stored as the criterion's expected score: the figure the table leads with and the report card
  reads); its integer level is that score rounded to the nearest level. Unread items are left out of the mean and
  counted; a row with more than `MAX_UNREAD_SHARE` of its items unread has no score. A small judge leans to Yes (the
  1.5B gave items of answers to other questions 0.65 on average): the score ranks answers, its absolute level is
  lenient.
- The level's probability (`level_probabilities`, stored as the criterion's probabilities, so escalation reads a
  confidence as it does for any verdict): were each item's Yes drawn on its own with its probability, how often the
  count of Yes would give each level. Items the judge is sure of put it on one level; one item at 0.5 among three
  splits the level between two.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from scipy.stats import poisson_binom

from llm_engineering.evaluation.judging.score_probs import TokenChoices
from llm_engineering.evaluation.judging.transport import JudgeReply, ReplySchema, choice_of

WRITER_SYSTEM = "You write grading checklists for answers to instructions. Reply with JSON."
WRITE_FROM_REFERENCE = (
    "Instruction: {instruction}\n\nReference answer: {reference}\n\n"
    "List the key points that a right answer to this instruction states, taken from the reference answer: its names, "
    "numbers, steps and main claims. Write each point as one short statement of fact, naming the thing it is about "
    "(for example: \"vLLM stores the KV cache in fixed-size blocks\"). Give between 1 and {max_items} points, the most "
    "important first; do not copy the whole reference into one point.\n\n"
    'Give them as JSON: {{"items": ["...", "..."]}}')
WRITE_FROM_INSTRUCTION = (
    "Instruction: {instruction}\n\n"
    "List what a right answer to this instruction must do or state: each thing it asks for, as one short requirement "
    "(for example: \"names two uses of a vector database\"). Give between 1 and {max_items} requirements, the most "
    "important first.\n\n"
    'Give them as JSON: {{"items": ["...", "..."]}}')
# One system prompt and one opening for every item of an answer: they share the prefix, which the prefix cache computes
# once per answer.
GRADER_SYSTEM = "You grade answers to instructions. Reply with exactly what is asked, nothing else."
# The point comes last: every item of one answer shares the prompt before it, and only the point is computed anew.
GRADE = ("Instruction: {instruction}\n\nAnswer: {answer}\n\nDoes the answer state the point below, and state it "
         "correctly? Reply No if it does not mention it, mentions it only vaguely, or says something different (another "
         "name, number or claim). Reply Yes or No.\n\nPoint: {item}")
YES_NO = ("Yes", "No")
ITEM_CHARS = 240
# An item is read only where Yes and No hold at least this share of the first token's probability: a judge that would
# begin its reply with another word ("The", "An") has not answered, and its Yes over No is noise (SmolLM2-135M leaves
# 0.04-0.13 to them, Qwen2.5-Coder-1.5B 0.997-1.0 on the embedded split's items).
YES_NO_FLOOR = 0.5
# A row is scored from its read items where at most this share of them is unread; past it, it has no score.
MAX_UNREAD_SHARE = 0.5


def writer_schema(max_items: int) -> ReplySchema:
    """The items as a JSON list of short strings."""
    return ReplySchema("checklist", {
        "type": "object", "additionalProperties": False, "required": ["items"],
        "properties": {"items": {"type": "array", "minItems": 1, "maxItems": max_items,
                                 "items": {"type": "string", "minLength": 1, "maxLength": ITEM_CHARS}}},
    })


def yes_no_schema() -> ReplySchema:
    """A one-token reply, Yes or No (`choices`: backends constrain the reply to them, or cut it at one token)."""
    return ReplySchema("yes_no", {"type": "string", "enum": list(YES_NO)}, choices=YES_NO)


def writer_messages(instruction: str, reference: Optional[str], max_items: int) -> list[dict[str, str]]:
    """The prompt that asks for a row's items: from its reference, or from the instruction where it has none."""
    prompt = (WRITE_FROM_REFERENCE.format(instruction=instruction, reference=reference, max_items=max_items)
              if reference else WRITE_FROM_INSTRUCTION.format(instruction=instruction, max_items=max_items))
    return [{"role": "system", "content": WRITER_SYSTEM}, {"role": "user", "content": prompt}]


def read_items(text: Optional[str]) -> Optional[list[str]]:
    """The items of a writer's reply, or None where the reply is not `{"items": [...]}`."""
    try:
        items = json.loads((text or "").strip()).get("items")
    except (json.JSONDecodeError, AttributeError):
        return None
    return [str(item) for item in items] if isinstance(items, list) else None


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def clean_items(items: Sequence[str], reference: Optional[str], max_items: int) -> tuple[list[str], list[str]]:
    """(items kept, why each other was dropped): empty, a repeat, a copy of the whole reference (an item holding nine
    in ten of a reference's words, where the reference has more than one sentence's worth of them), past `max_items`."""
    kept: list[str] = []
    dropped: list[str] = []
    reference_words = set(_words(reference or ""))
    for raw in items:
        item = " ".join(str(raw).split())
        if not item:
            dropped.append("an empty item")
        elif item.lower() in (k.lower() for k in kept):
            dropped.append(f"a repeat: {item!r}")
        elif len(reference_words) > 20 and len(reference_words & set(_words(item))) >= 0.9 * len(reference_words):
            dropped.append(f"a copy of the whole reference: {item[:60]!r}...")
        elif len(kept) >= max_items:
            dropped.append(f"past the {max_items}-item limit: {item!r}")
        else:
            kept.append(item)
    return kept, dropped


def grade_messages(instruction: str, answer: str, item: str) -> list[dict[str, str]]:
    """The prompt that asks whether `answer` states `item` (the item last: see the module doc)."""
    return [{"role": "system", "content": GRADER_SYSTEM},
            {"role": "user", "content": GRADE.format(instruction=instruction, answer=answer, item=item)}]


@dataclass(frozen=True)
class ItemReading:
    """One item's answer: P(Yes) over Yes and No at the first token, and the share of that token's probability Yes and
    No hold (`mass`); `yes` is None, with why, where the item is unread."""

    yes: Optional[float]
    mass: Optional[float]
    problem: Optional[str] = None


def yes_probability(reply: JudgeReply) -> ItemReading:
    """P(Yes) / (P(Yes) + P(No)) at the reply's first token, where Yes and No hold at least `YES_NO_FLOOR` of it; else
    unread, with the mass they hold and why."""
    if reply.text is None:
        return ItemReading(None, None, reply.error or "no reply")
    tokens: Optional[list[TokenChoices]] = reply.logprobs
    if not tokens:
        return ItemReading(None, None, reply.logprobs_problem or "the judge backend returned no token logprobs")
    mass = {"Yes": 0.0, "No": 0.0}
    candidates = tokens[0][1] or []
    for text, logprob in candidates:
        side = choice_of(text, YES_NO)
        if side is not None:
            mass[side] += math.exp(logprob)
    total = mass["Yes"] + mass["No"]
    if total < YES_NO_FLOOR:
        # The likeliest candidate, not the reply's text: a judge held to Yes or No replied one of them whatever it was.
        likeliest = max(candidates, key=lambda c: c[1], default=(reply.text, 0.0))
        return ItemReading(None, round(total, 6), f"unread: Yes and No hold {total:.2f} of the first token's probability, "
                           f"under the floor {YES_NO_FLOOR} (its likeliest first token: {likeliest[0]!r} at "
                           f"{math.exp(likeliest[1]):.2f})")
    return ItemReading(round(mass["Yes"] / total, 6), round(total, 6))


@dataclass(frozen=True)
class GradedItem:
    """An item and how it was read: P(Yes), the Yes and No mass, why it is unread (yes None)."""

    item: str
    yes: Optional[float]
    mass: Optional[float] = None
    problem: Optional[str] = None


@dataclass(frozen=True)
class ChecklistScore:
    """A row's grading: its level on the scale (integer), its expected score, the probability of each level of the
    scale (`level_probabilities`), each item as read; or why none."""

    level: Optional[int]
    expected: Optional[float]
    items: list[GradedItem]
    problem: Optional[str] = None
    probabilities: Optional[list[float]] = None

    @property
    def unread(self) -> int:
        return sum(i.yes is None for i in self.items)

    def analysis(self) -> str:
        """The items in words, the missed first: `missed: X (0.12); held: Y (0.98); unread: Z (Yes and No 0.08)`."""
        missed = [f"{i.item} ({i.yes:.2f})" for i in self.items if i.yes is not None and i.yes < 0.5]
        held = [f"{i.item} ({i.yes:.2f})" for i in self.items if i.yes is not None and i.yes >= 0.5]
        unread = [f"{i.item} ({f'Yes and No {i.mass:.2f}' if i.mass is not None else i.problem})"
                  for i in self.items if i.yes is None]
        parts = ([f"not stated: {'; '.join(missed)}"] if missed else []) + ([f"stated: {'; '.join(held)}"] if held else []) \
            + ([f"unread, left out of the score: {'; '.join(unread)}"] if unread else [])
        counted = f"{len(held)} of {len(self.items) - len(unread)} checklist items stated"
        return counted + (f" ({len(unread)} unread)" if unread else "") + ". " + ". ".join(parts)


def level_probabilities(probabilities: Sequence[float], values: Sequence[int]) -> list[float]:
    """The probability of each level of `values` were each item's Yes drawn on its own with its probability: the count
    of Yes is Poisson-binomial, and `count` Yes of n gives the level `checklist_score` gives a mean of count / n."""
    n, low, high = len(probabilities), min(values), max(values)
    chances = poisson_binom.pmf(range(n + 1), list(probabilities))
    out = {v: 0.0 for v in values}
    for count, chance in enumerate(chances):
        out[math.floor(low + (high - low) * count / n + 0.5)] += float(chance)
    return [round(out[v], 6) for v in values]


def checklist_score(items: Sequence[str], readings: Sequence[ItemReading], values: Sequence[int]) -> ChecklistScore:
    """The row's score on the scale `values` from its read items (the rule: module doc); none where it has no item or
    more than `MAX_UNREAD_SHARE` of them unread (the first one's reason kept)."""
    graded = [GradedItem(item, r.yes, r.mass, r.problem) for item, r in zip(items, readings)]
    if not graded:
        return ChecklistScore(None, None, [], "the row has no checklist items")
    read = [g.yes for g in graded if g.yes is not None]
    unread = [g for g in graded if g.yes is None]
    if not read or len(unread) > MAX_UNREAD_SHARE * len(graded):
        return ChecklistScore(None, None, graded, f"{len(unread)} of {len(graded)} checklist items unread, more than "
                              f"{MAX_UNREAD_SHARE:.0%} ({unread[0].item!r}: {unread[0].problem})")
    low, high = min(values), max(values)
    score = low + (high - low) * sum(read) / len(read)
    return ChecklistScore(math.floor(score + 0.5), round(score, 6), graded,
                          probabilities=level_probabilities(read, values))
