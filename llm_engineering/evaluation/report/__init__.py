"""Report: what a run found, in numbers and words.

- `summary`: per-model aggregates with intervals, the judge's trust figures, the headline.
- `trust_text`: the sentences about the judge that every output shares.
- `turns_text`: conversations' figures per turn (scores, pairwise win rates).
- `text`, `plots`, `html`, `rows`, `items`: console text, figures, the standalone HTML report, its row browser.
- `comparison`, `comparison_text`: two runs side by side.
- `gates`: the exit-code checks for CI (`--fail-on-regression`, thresholds).
- `judge_bench`: judge-bench's table and HTML.
- `failures`: the judge's failures by cause (console, HTML, judge-bench), and the exit of a run without any verdict.

Nothing else in evaluation/ imports this room.
"""
