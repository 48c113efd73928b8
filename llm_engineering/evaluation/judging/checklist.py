"""Checklist verdicts: a row's reference broken into items (the points a right answer states), each item answered
by the judge in one token, yes or no, read as a probability (RocketEval, ICLR 2025; TICK; InFoBench's DRFR).

- Items: once per row, the reference's sentences (`reference_points`: each a claim a right answer states; asked to
  list the points, the 1.5B judge copied the sentences in 6 of 8 rows, at 7 s a row of decoding), or written by a
  model (the judge, or a stronger one: `checklists.writer`) from the instruction and the reference, and from the
  instruction alone where a row has no reference (what it asks for); or given by the dataset's `checklist` column.
  Each list is cleaned (`clean_items`): an empty item, a repeat, a copy of the whole reference or one past
  `max_items` is dropped with its reason.
- Grading: one prompt per item, the item last, so every item of one answer shares the prompt's prefix (vLLM's prefix
  cache computes it once); the reply is one token, Yes or No, and the item's probability is
  P(Yes) / (P(Yes) + P(No)) from that token's candidates (`yes_probability`). No analysis is decoded.
- The score (`checklist_score`): the scale's lowest level plus its range times the mean of the items' probabilities
  (stored as the criterion's expected score: the figure the table leads with and the report card reads); its integer
  level is that score rounded to the nearest level. A small judge leans to Yes (the 1.5B gave items of answers to
  other questions 0.65 on average): the score ranks answers, its absolute level is lenient.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.judging.transport import JudgeReply, ReplySchema
from llm_engineering.evaluation.judging.score_probs import TokenChoices

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
# One system prompt and one opening for every question about an answer (each item, and the other criteria's scores):
# they share the prefix, which the prefix cache computes once per answer.
GRADER_SYSTEM = "You grade answers to instructions. Reply with exactly what is asked, nothing else."
SCORES = ("Instruction: {instruction}\n\nAnswer: {answer}\n\nScore the answer on {criteria}.\n\n{scales}\n\n"
          "Give the scores as JSON: {format}")
# The point comes last: every item of one answer shares the prompt before it, and only the point is computed anew.
GRADE = ("Instruction: {instruction}\n\nAnswer: {answer}\n\nDoes the answer state the point below, and state it "
         "correctly? Reply No if it does not mention it, mentions it only vaguely, or says something different (another "
         "name, number or claim). Reply Yes or No.\n\nPoint: {item}")
YES_NO = ("Yes", "No")
ITEM_CHARS = 240


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


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def reference_points(reference: str, max_items: int) -> list[str]:
    """The reference's sentences, its points in order; past `max_items`, the last ones joined to the final item (so no
    point is left out of the checklist)."""
    sentences = [s.strip() for s in _SENTENCE_END.split(" ".join(reference.split())) if s.strip()]
    return sentences[:max_items - 1] + [" ".join(sentences[max_items - 1:])] if len(sentences) > max_items else sentences


def grade_messages(instruction: str, answer: str, item: str) -> list[dict[str, str]]:
    """The prompt that asks whether `answer` states `item` (the item last: see the module doc)."""
    return [{"role": "system", "content": GRADER_SYSTEM},
            {"role": "user", "content": GRADE.format(instruction=instruction, answer=answer, item=item)}]


def scores_messages(rubric: Rubric, instruction: str, answer: str) -> list[dict[str, str]]:
    """The prompt that asks for the scores of `rubric`'s criteria alone, with the grading prompts' opening."""
    scales = "\n\n".join(f"{c.name.capitalize()}: {c.description}\n" + "\n".join(f"{level}: {meaning}" for level, meaning
                                                                              in c.scale.items()) for c in rubric.criteria)
    example = "{" + ", ".join(f'"{c.name}": {{"score": {c.values[0]}}}' for c in rubric.criteria) + "}"
    prompt = SCORES.format(instruction=instruction, answer=answer, criteria=", ".join(rubric.names), scales=scales,
                           format=example)
    return [{"role": "system", "content": GRADER_SYSTEM}, {"role": "user", "content": prompt}]


def _side(text: str) -> Optional[str]:
    """'yes' or 'no' for a candidate token that starts one of them (vLLM may offer `Y` or `N` under the grammar), else None."""
    word = text.strip().lower()
    if word and "yes".startswith(word):
        return "yes"
    if word and "no".startswith(word):
        return "no"
    return None


def yes_probability(reply: JudgeReply) -> tuple[Optional[float], Optional[str]]:
    """P(Yes) / (P(Yes) + P(No)) at the reply's first token, or None and why not."""
    if reply.text is None:
        return None, reply.error or "no reply"
    tokens: Optional[list[TokenChoices]] = reply.logprobs
    if not tokens:
        return None, reply.logprobs_problem or "the judge backend returned no token logprobs"
    candidates = tokens[0][1] or []
    mass = {"yes": 0.0, "no": 0.0}
    for text, logprob in candidates:
        side = _side(text)
        if side is not None:
            mass[side] += math.exp(logprob)
    total = mass["yes"] + mass["no"]
    if total <= 0:
        return None, f"neither Yes nor No among the first token's candidates (reply {reply.text!r})"
    return round(mass["yes"] / total, 6), None


@dataclass(frozen=True)
class ChecklistScore:
    """A row's grading: its level on the scale (integer), its expected score, each item's probability; or why none."""

    level: Optional[int]
    expected: Optional[float]
    items: list[tuple[str, Optional[float]]]
    problem: Optional[str] = None

    def analysis(self) -> str:
        """The items in words, the missed first: `missed: X (0.12); held: Y (0.98)`."""
        missed = [f"{item} ({p:.2f})" for item, p in self.items if p is not None and p < 0.5]
        held = [f"{item} ({p:.2f})" for item, p in self.items if p is not None and p >= 0.5]
        parts = ([f"not stated: {'; '.join(missed)}"] if missed else []) + ([f"stated: {'; '.join(held)}"] if held else [])
        return f"{len(held)} of {len(self.items)} checklist items stated. " + ". ".join(parts)


def checklist_score(items: Sequence[str], probabilities: Sequence[Optional[float]], values: Sequence[int],
                    problems: Sequence[Optional[str]] = ()) -> ChecklistScore:
    """The row's score on the scale `values` from its items' probabilities (the rule: module doc); none where an item
    could not be read (its reason kept)."""
    pairs = list(zip(items, probabilities))
    if not pairs:
        return ChecklistScore(None, None, [], "the row has no checklist items")
    unread = [(item, why) for (item, p), why in zip(pairs, [*problems, *[None] * len(pairs)]) if p is None]
    if unread:
        item, why = unread[0]
        return ChecklistScore(None, None, pairs, f"{len(unread)} of {len(pairs)} items not read ({item!r}: {why})")
    low, high = min(values), max(values)
    known = [p for _, p in pairs if p is not None]
    score = low + (high - low) * sum(known) / len(known)
    return ChecklistScore(math.floor(score + 0.5), round(score, 6), pairs)
