"""Every type a run stores as an artifact, one module per artifact family.

ZenML stores each artifact with its type's import path and loads the type from that path, so these modules do not
move and their classes keep their names: logic lives elsewhere and imports them. Types stored before this package
existed (under the modules of their logic) still load: `llm_engineering/stored_types.py`.

- `figures`: a rate with its interval, a score's correlation with length, a jury's agreement (shared by the others)
- `generation`: `GenerationStats` (`generation_stats`)
- `pairwise`: `PairwiseReport` (`pairwise_comparisons`) and its comparisons and rows
- `trust`: `TrustChecks` (`trust_checks`): the judge check with its tiers, the similarity check
- `labels`: `LabelAgreement` (`label_agreement`): agreement with a person's labels
- `summary`: `EvaluationSummary` (`evaluation_summary`): scores per model, comparisons, checks, the rows to read
- `checklist`: what a summary holds of a checklist rubric's rows (unread items, item sources)
- `metrics`: the judge-free figures inside a summary (each metric's mean, the checks' pass rates, a check's verdict)
- `publishing`: `PublishReceipt` (`publish_receipt`)

Imports nothing of the project but this package: every room (generation, judging, trust, report) and the
infrastructure may import it.
"""
