"""Judging: an LLM judge's verdicts on answers.

- `rubric`: the criteria, scales and prompts a judge scores with (shipped rubrics in ../data/rubrics).
- `conversation`: a turn of a conversation as the judge reads it (the conversation so far; a pair's two conversations).
- `verdict`: a rubric's verdict model, its JSON schema (constraining generation) and the parser of replies.
- `judge_id`: a judge's identity on verdicts and artifacts (`backend:model[@url]`, a jury's), built and read.
- `transport`: asking a judge backend a batch of conversations, with the cache and limits.
- `cache`: verdicts keyed by judge, rubric and prompt, so a rescore asks only what changed.
- `failures`: why a verdict failed, read back from the error its row stores, counted by cause.
- `score_probs`: expected scores from the judge's probabilities over the score tokens.
- `before_analysis`: an analysis-first rubric's expected scores, from a short reply that gives the scores first.
- `scoring`: pointwise scores per row and criterion, a jury's aggregate.
- `pairwise`: two models' answers compared in both orders; win rates.
- `agreement`: agreement between judges of a jury, and the verdicts' length bias.

This room does not import trust (what measures a judge) or report.
"""
