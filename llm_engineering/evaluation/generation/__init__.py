"""Generation: from a test split to answers.

- `prompts`: prompt templates (Alpaca, the model's chat template) and the Alpaca turn markers.
- `dataset`: loading and validating a test split (embedded, Hub id, local files), prompts added.
- `engine`: the `GenerationEngine` protocol any engine implements (in-process vLLM, Ray replicas).
- `checkpoint`: answers appended as they finish, so an interrupted run resumes.
- `answers`: every prompt of a model in one engine call, each answer checkpointed; throughput stats.

This room knows nothing of judging, trust or reports.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    # Artifacts stored before this package existed name `llm_engineering.evaluation.generation.GenerationStats`
    # (then a module; see llm_engineering/stored_types.py).
    if name == "GenerationStats":
        from llm_engineering.evaluation.generation.answers import GenerationStats

        return GenerationStats
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
