"""Generation: from a test split to answers.

- `prompts`: prompt templates (Alpaca, the model's chat template) and the Alpaca turn markers.
- `source`: reading one split from its source (embedded, Hub id, local files and folders), in its encoding.
- `dataset`: a test split's columns found by role, validated and subset, prompts added.
- `conversation_rows`: multi-turn rows (`turns`, `messages`) as a row per answered turn, validated.
- `engine`: the `GenerationEngine` protocol any engine implements (in-process vLLM, Ray replicas).
- `checkpoint`: answers appended as they finish, so an interrupted run resumes.
- `answers`: every prompt of a model in one engine call (conversations: one per turn), each answer checkpointed;
  throughput stats (`GenerationStats`, in `evaluation.stored.generation`).

This room knows nothing of judging, trust or reports.
"""
