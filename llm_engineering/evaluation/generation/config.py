"""Generation's configs: where the test split comes from (its source, split, columns and rows), how an instruction
becomes a prompt, and how answers are sampled. Each forbids unknown keys and is frozen (`config_base.Strict`); the run
config composes them (`llm_engineering.run_config`)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, PositiveInt

from llm_engineering.evaluation.config_base import Strict, TextEncoding
from llm_engineering.evaluation.generation.prompts import ALPACA_TURN_MARKERS


class ColumnsConfig(Strict):
    """The dataset's columns holding the instruction, the reference answer (optional per row) and the id; unset: found
    by their usual names (`columns.INSTRUCTION_ALIASES`, `REFERENCE_ALIASES`, `id`). `turns`, `messages` as they are.
    A row's checks and its category (both optional; unset: the columns `checks` and `category` where present)."""

    instruction: Optional[str] = None
    reference: Optional[str] = None
    id: Optional[str] = None
    checks: Optional[str] = None
    category: Optional[str] = None


class DatasetConfig(Strict):
    """Where the test split comes from and which rows to evaluate."""

    source: str = Field(
        "embedded",
        description="'embedded', 'embedded-conversations' (two-turn rows), a Hugging Face dataset id, or a local "
        "path (json, jsonl, parquet, csv, or a save_to_disk / dataset repo folder).",
    )
    split: str = Field("test", description="The split to read (--split): test, validation, train...; a file is one: test")
    columns: ColumnsConfig = Field(default_factory=ColumnsConfig, description="Your column names (--column ROLE=NAME).")
    limit: Optional[PositiveInt] = Field(None, description="Evaluate only the first N rows.")
    dummy: bool = Field(False, description="Evaluate only 10 rows, as the original's dummy mode.")
    revision: Optional[str] = None
    encoding: TextEncoding = Field("utf-8", description="A csv or json(l) file's text encoding (--encoding): utf-8 (a "
                                   "BOM is read as one), latin-1, cp1252...")

    @property
    def row_limit(self) -> Optional[int]:
        limits = [n for n in (self.limit, 10 if self.dummy else None) if n]
        return min(limits) if limits else None


class PromptConfig(Strict):
    """How an instruction becomes the text the model sees."""

    template: Literal["auto", "alpaca", "chat"] = Field(
        "auto", description="auto: the model's own chat template where its tokenizer has one, else the Alpaca "
        "template; alpaca: the original's template (for Alpaca fine-tunes); chat: the model's chat template.",
    )
    system_prompt: Optional[str] = Field(None, description="Only used with the chat template.")


class SamplingConfig(Strict):
    """vLLM sampling parameters for answer generation (the original's defaults)."""

    temperature: float = Field(0.8, ge=0.0, le=5.0)
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    min_p: float = Field(0.05, ge=0.0, le=1.0)
    max_tokens: PositiveInt = 256
    seed: Optional[int] = 42
    n: PositiveInt = Field(
        1, description="Answers per prompt (--samples K), each judged: the summary's intervals then take in how far a "
        "model's answers to one prompt differ. The s-th answer is drawn with seed + s, as vLLM's own `n` draws it, so "
        "each is saved and resumed on its own, and raising n keeps the answers already generated.",
    )
    # A chat model fed the Alpaca template goes on into new turns of its own ("### Instruction: ..."): the
    # answer ends at the template's turn markers. A chat template ends turns with its own end token.
    stop: list[str] = Field(
        default_factory=lambda: list(ALPACA_TURN_MARKERS),
        description="Strings that end an answer (not kept in it); [] for none.",
    )

    def seed_of(self, sample: int) -> Optional[int]:
        """The seed of a prompt's `sample`-th answer: seed + sample, as vLLM's `n` seeds its s-th child request (None:
        unseeded)."""
        return None if self.seed is None else self.seed + sample
