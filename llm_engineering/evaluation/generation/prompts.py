"""Turn instructions into model prompts: the original's Alpaca template or the model's chat template."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Mapping, Optional, Protocol

ALPACA_PREAMBLE = ("Below is an instruction that describes a task. "
                   "Write a response that appropriately completes the request.\n\n")
ALPACA_TURN = "### Instruction:\n{instruction}\n\n### Response:\n"
ALPACA_TEMPLATE = ALPACA_PREAMBLE + ALPACA_TURN
# Where an Alpaca turn begins: an answer that reaches one has ended (the model is writing the next turn).
ALPACA_TURN_MARKERS = ("### Instruction:", "### Input:", "### Response:")


class ChatTokenizer(Protocol):
    def apply_chat_template(self, conversation: Any, /, *, tokenize: bool = ..., add_generation_prompt: bool = ...) -> Any: ...


def alpaca_prompt(instruction: str) -> str:
    """The instruction in the Alpaca template the original fine-tuned models were trained on."""
    return ALPACA_TEMPLATE.format(instruction=instruction)


def chat_messages(instruction: str, system_prompt: Optional[str] = None) -> list[dict[str, str]]:
    """One user turn (after an optional system turn) for a chat-tuned model."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return messages + [{"role": "user", "content": instruction}]


def chat_prompt(
    tokenizer: ChatTokenizer, instruction: str, system_prompt: Optional[str] = None
) -> str:
    """The instruction rendered with the model's own chat template, ready for generation."""
    if not has_chat_template(tokenizer):
        raise ValueError(
            "The model's tokenizer has no chat template; set prompt.template to 'alpaca'."
        )
    return tokenizer.apply_chat_template(
        chat_messages(instruction, system_prompt), tokenize=False, add_generation_prompt=True
    )


def has_chat_template(tokenizer: Optional[ChatTokenizer]) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def effective_template(template: str, tokenizer: Optional[ChatTokenizer]) -> str:
    """`auto` -> `chat` where the model's tokenizer has a chat template, else `alpaca`; others as given."""
    if template == "auto":
        return "chat" if has_chat_template(tokenizer) else "alpaca"
    return template


def format_prompts(
    instructions: list[str],
    template: str,
    tokenizer: Optional[ChatTokenizer] = None,
    system_prompt: Optional[str] = None,
) -> list[str]:
    """Prompts for a list of instructions; `chat` and `auto` need the model's tokenizer."""
    template = effective_template(template, tokenizer)
    if template == "alpaca":
        return [alpaca_prompt(text) for text in instructions]
    if template == "chat":
        if tokenizer is None:
            raise ValueError("The chat template needs the model's tokenizer.")
        return [chat_prompt(tokenizer, text, system_prompt) for text in instructions]
    raise ValueError(f"Unknown prompt template {template!r}; use 'auto', 'alpaca' or 'chat'.")


Message = Mapping[str, Optional[str]]  # {role, content}


def conversation_messages(history: Sequence[Message], instruction: str,
                          system_prompt: Optional[str] = None) -> list[dict[str, str]]:
    """The conversation so far, then this turn's user message; the config's system prompt first unless the
    conversation opens with its own."""
    own_system = bool(history) and history[0]["role"] == "system"
    messages = [] if own_system else chat_messages(instruction, system_prompt)[:-1]
    return messages + [{"role": str(m["role"]), "content": str(m["content"])} for m in history] + [
        {"role": "user", "content": instruction}]


def alpaca_conversation(history: Sequence[Message], instruction: str) -> str:
    """A conversation in the Alpaca template: its preamble once, then each earlier turn's instruction and response, and
    this turn's instruction (a system message has no place in it and is left out)."""
    turns = [m for m in history if m["role"] != "system"]
    done = "".join(ALPACA_TURN.format(instruction=user["content"]) + f"{assistant['content']}\n\n"
                   for user, assistant in zip(turns[0::2], turns[1::2]))
    return ALPACA_PREAMBLE + done + ALPACA_TURN.format(instruction=instruction)


def conversation_prompt(history: Sequence[Message], instruction: str, template: str,
                        tokenizer: Optional[ChatTokenizer] = None, system_prompt: Optional[str] = None) -> str:
    """A turn of a conversation as the model reads it: the conversation so far (with the model's own earlier answers)
    and this turn's message, in the model's chat template or, where the template is `alpaca`, the Alpaca one."""
    template = effective_template(template, tokenizer)
    if template == "alpaca":
        return alpaca_conversation(history, instruction)
    if tokenizer is None or not has_chat_template(tokenizer):
        raise ValueError("The model's tokenizer has no chat template; set prompt.template to 'alpaca'.")
    return tokenizer.apply_chat_template(conversation_messages(history, instruction, system_prompt), tokenize=False,
                                         add_generation_prompt=True)
