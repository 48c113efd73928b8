"""What a judge reads of a turn of a conversation: the conversation so far, in place of the instruction.

As MT-Bench's multi-turn judge prompts: the judge sees every earlier turn and is asked to judge the last answer only.
A pair of answers to one turn comes from two models that each answered the earlier turns in their own words: the
user's messages are shown once, and each answer after its own model's earlier answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

History = Optional[Sequence[Mapping[str, Any]]]

CONVERSATION_INTRO = ("A conversation between a user and an assistant. Judge only the assistant's answer to its last "
                      "user message below, with the turns before it as its context.")
PAIR_INTRO = ("The last user message of a conversation. Each answer below continues its own assistant's earlier "
              "answers, shown with it: compare only the answers to the last message, with the turns before as context.")


def _turn(role: str, content: Any) -> str:
    return f"### {role}:\n{content}\n\n"


def conversation_text(history: Sequence[Mapping[str, Any]], instruction: str) -> str:
    """The conversation up to a turn, ending with the user message whose answer is judged."""
    turns = "".join(_turn(str(m["role"]).capitalize(), m["content"]) for m in history)
    return f"{CONVERSATION_INTRO}\n\n{turns}" + _turn("User", instruction).rstrip()


def turn_pair(instruction: str, answer_a: str, answer_b: str, history_a: History, history_b: History
              ) -> tuple[str, str, str]:
    """(what the judge reads as the instruction, answer a, answer b) of a pair of answers to one turn."""
    history_a, history_b = list(history_a or []), list(history_b or [])
    if not history_a and not history_b:
        return instruction, answer_a, answer_b
    if history_a == history_b:  # the earlier answers were given, not the models': one conversation
        return conversation_text(history_a, instruction), answer_a, answer_b
    users = [m["content"] for m in history_a if m["role"] == "user"] + [instruction]
    shown = "".join(_turn(f"User, turn {k}", text) for k, text in enumerate(users, 1)).rstrip()

    def own(history: list[Mapping[str, Any]], answer: str) -> str:
        earlier = [m["content"] for m in history if m["role"] == "assistant"]
        return "".join(_turn(f"Assistant, turn {k}", text) for k, text in enumerate(earlier, 1)) + _turn(
            f"Assistant, turn {len(users)} (the answer compared)", answer).rstrip()

    return f"{PAIR_INTRO}\n\n{shown}", own(history_a, answer_a), own(history_b, answer_b)
