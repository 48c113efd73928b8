"""Turn instructions into model prompts: the original's Alpaca template or the model's chat template."""

from __future__ import annotations

from typing import Any, Optional, Protocol

ALPACA_TEMPLATE = (
    "Below is an instruction that describes a task. "
    "Write a response that appropriately completes the request.\n\n"
    "### Instruction:\n{instruction}\n\n### Response:\n"
)
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
