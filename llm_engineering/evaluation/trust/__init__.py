"""Trust: how far the judge's verdicts can be believed.

- `judge_check`: the judge scores reference answers against corrupted and mismatched ones (`tiers`).
- `similarity`: embedding similarity of answers to references, a judge-free signal.
- `labels`, `preference_agreement`, `label_agreement`, `label_check`: a person's labels, and the judge's agreement
  with them.
- `human_pairs`, `judge_bench`: the judge against published human preference pairs (LLMBar, MT-Bench).

This room does not import report.
"""
