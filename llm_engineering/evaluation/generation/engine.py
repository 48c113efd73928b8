"""What generation needs from an engine: the model's tokenizer, answers as they finish, and an end.

Evaluation defines this protocol; `llm_engineering.infrastructure` implements it (in-process vLLM,
Ray Data LLM replicas) and the wiring hands an implementation in, so generation never knows which
engine runs and never imports one.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any, Optional, Protocol

from llm_engineering.evaluation.generation.checkpoint import AnswerRecord
from llm_engineering.evaluation.generation.config import SamplingConfig
from llm_engineering.evaluation.generation.prompts import ChatTokenizer

# A generator rather than any iterator: closing it is how a consumer stops the engine's work early.
Answers = Generator[tuple[int, AnswerRecord], None, None]


class Tokenizer(ChatTokenizer, Protocol):
    """The model's Hugging Face tokenizer: its chat template, and `tokenizer(texts)["input_ids"]` for lengths."""

    def __call__(self, text: Any, /, *, add_special_tokens: bool = ...) -> Any: ...


class GenerationEngine(Protocol):
    """One model's generation engine, used for one model's answers and then closed."""

    def get_tokenizer(self) -> Tokenizer:
        """The model's tokenizer: prompts are formatted and measured with it before generation."""
        ...

    def generate(self, prompts: dict[int, str], sampling: SamplingConfig,
                 samples: Optional[Mapping[int, int]] = None) -> Answers:
        """Yield `(index, answer)` for every prompt, each as soon as it finishes (not in input order).

        `samples` gives a prompt's sample number s (0 where absent): its answer is drawn with `sampling.seed + s`
        (`SamplingConfig.seed_of`), so the same prompt asked as samples 0..K-1 gives K different answers, each
        reproducible alone.

        A generator: closing it early (Ctrl-C, an error in the consumer) stops the work still in
        flight, so every answer yielded so far can be kept and the rest asked for again.
        """
        ...

    def close(self) -> None:
        """End this use of the engine; what it frees is the implementation's to say."""
        ...
