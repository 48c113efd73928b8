"""Metrics: scores a user can check without a judge, pure functions of an answer, its reference and its row.

- `names`: the metrics' names (the config's `metrics:`, `--metric`, the gates' and tables' names), importing nothing;
- `words`: content words, names and numbers of a text, and the share of a reference's the answer holds (the report
  card's rules and judge-bench count the same);
- `reference`: exact match and token F1 (SQuAD), ROUGE-L (rouge-score), chrF and BLEU (sacrebleu), the reference's
  words and facts held; `math_answers`: a final value against the reference's (math-verify);
- `checks`, `check_rows`: per-row checks (contains, regex, is_json, json_schema, min_words, number...), each type a
  pydantic model, read and validated from a dataset's rows or the config;
- `config`: what a run measures (`metrics:`, `checks:`); `measure`: the evaluations' metric and check columns.

Below judging and trust (a contract in pyproject.toml): it imports nothing of generation, judging, trust or report.
"""
