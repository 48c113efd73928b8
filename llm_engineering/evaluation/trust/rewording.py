"""Right answers that are not copies: the references reworded by the judge, for a judge that sees the reference.

A reference-guided judge shown the reference as the answer compares a text with itself, which proves nothing
(the rule "identical to the reference is right" passes that). So the report card's right answer is then the
reference in other words, written by the judge's own backend at temperature 0 and kept only where it still
holds every number and name of the reference and most of its content words (`MIN_SHARE`), and is not the reference
itself. The judge may favour its own wording (self-preference): the card says that its right answers are the judge's
rewordings (measured for the 1.5B judge against another model's: benchmarks/judge_studies/self_preference.py).
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.transport import ReplySchema, ask_judge
from llm_engineering.evaluation.metrics.words import facts
from llm_engineering.evaluation.metrics.words import word_share as reference_word_share

# A rewording holds at least this share of the reference's content words. A weak writer's "rewording" can be a summary
# that keeps every name ("This text discusses ... MongoDB ...": 11% of the words); judged lower, it is no right answer.
# The 1.5B judge's own rewordings of the embedded split hold 69-100% (benchmarks/README.md, self-preference).
MIN_SHARE = 0.6

SYSTEM = "You rewrite texts in other words. Reply with JSON."
# The question is not shown: shown it, the judge opened most rewordings by restating it, which adds the instruction's
# words to the right answer (and lets the instruction-overlap rule pass the same_topic tier).
PROMPT = ("Rewrite the text below in other words. Keep every fact, number, name and technical term it uses, the order "
          "of its points and about its length; change the wording of each sentence. Do not add anything.\n\n"
          'Text: {reference}\n\nGive the rewritten text as JSON: {{"answer": "..."}}')


def rewording_schema(references: Sequence[str]) -> ReplySchema:
    """One string, at most half again as long as the longest reference."""
    longest = max((len(r) for r in references), default=0)
    return ReplySchema("rewording", {
        "type": "object", "properties": {"answer": {"type": "string", "maxLength": int(longest * 1.5) + 20}},
        "required": ["answer"], "additionalProperties": False,
    })


def read_rewording(text: Optional[str]) -> Optional[str]:
    """The rewritten answer of a reply, or None where the reply is not `{"answer": "..."}`."""
    try:
        answer = json.loads((text or "").strip()).get("answer")
    except (json.JSONDecodeError, AttributeError):
        return None
    return answer.strip() if isinstance(answer, str) and answer.strip() else None


def word_share(reference: str, rewording: str) -> float:
    """The share of the reference's content words the rewording holds (1.0 for a reference without any)."""
    share = reference_word_share(reference, rewording)
    return 1.0 if share is None else share


def keeps_the_facts(reference: str, rewording: str) -> bool:
    """Every number and name of the reference and `MIN_SHARE` of its content words are in the rewording, and the
    rewording is not the reference."""
    if " ".join(rewording.split()) == " ".join(reference.split()) or word_share(reference, rewording) < MIN_SHARE:
        return False
    lowered = rewording.lower()
    return all(fact.lower() in lowered for fact in facts(reference))


def reworded_references(judge: Judge, references: Sequence[str]) -> list[Optional[str]]:
    """Each reference reworded by the judge's first backend (through the judge's cache), or None where the
    rewording failed, was cut, lost a fact or most of the reference's words."""
    conversations = [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT.format(reference=r)}]
                     for r in references]
    replies = ask_judge(judge.backend, conversations, cache=judge.cache, is_valid=lambda text: read_rewording(text) is not None,
                        reply_schema=rewording_schema(references))
    worded = [read_rewording(reply.text) for reply in replies]
    return [w if w is not None and keeps_the_facts(r, w) else None for w, r in zip(worded, references)]
