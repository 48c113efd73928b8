"""Report: what a run found, in numbers and words.

- `summary`: per-model aggregates with intervals, the judge's trust figures, the headline; `criterion_scores`,
  `measures`, `categories`: a criterion's figures, the judge-free metrics' and checks', every score per category.
- `trust_text`: the sentences about the judge that every output shares.
- `turns_text`: conversations' figures per turn (scores, pairwise win rates).
- `text`, `score_tables`, `measures_text`, `plots`, `html`, `rows`, `items`: console text and tables, figures, the
  standalone HTML report, its row browser.
- `comparison`, `comparison_text`: two runs side by side.
- `gates`: the exit-code checks for CI (`--fail-on-regression`, thresholds).
- `judge_bench`: judge-bench's table and HTML.
- `failures`: the judge's failures by cause (console, HTML, judge-bench), and the exit of a run without any verdict.

Nothing else in evaluation/ imports this room.
"""
