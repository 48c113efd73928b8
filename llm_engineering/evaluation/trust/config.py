"""Trust's configs: the judge check (the report card's rows, threshold, seed and tiers) and the reference similarity.
Each forbids unknown keys and is frozen (`config_base.Strict`); the run config composes them
(`llm_engineering.run_config`)."""

from __future__ import annotations

from pydantic import Field, NonNegativeInt, PositiveInt

from llm_engineering.evaluation.config_base import Strict
from llm_engineering.evaluation.trust.tiers import TIERS, Tier


class JudgeCheckConfig(Strict):
    """Judge check: the judge also scores sampled references and mismatched references."""

    rows: NonNegativeInt = Field(20, description="Rows sampled for the check; 0 turns it off.")
    threshold: float = Field(
        0.7, ge=0.0, le=1.0,
        description="Below this share of pairs where the right answer scores higher (integer scores), the judge is "
        "flagged 'no signal'.",
    )
    seed: int = Field(0, description="Fixes the sample and the mismatched pairing.")
    tiers: list[Tier] = Field(
        default_factory=lambda: list(TIERS), description="Report card tiers, each `rows` pairs: mismatch (always), "
        "same_topic (another row's reference holding most of this one's words), truncated (the instruction echoed and "
        "the reference's first third looping), corrupted (names and numbers swapped), relation_swap (two exchanged), "
        "negation (a statement negated); same_topic, relation_swap, negation keep pairs no judge-free rule orders.",
    )


class SimilarityConfig(Strict):
    """Reference similarity: cosine of answer and reference embeddings (all-MiniLM-L6-v2, offline)."""

    enabled: bool = True
    batch_size: PositiveInt = 32

