"""Measurements, not tests, in three rooms: `performance` (how fast), `soak` (what survives size, faults and a
kill), `judge_studies` (how far the verdicts and scores hold). Each runs from the repository root as
`python -m benchmarks.<room>.<name>`; the figures go under `RESULTS`. No test imports a benchmark: what both need
lives in `tests/support`."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
