"""Command-line entry point: parse flags, pick a config, call a pipeline, print the summary.

One subcommand per job (`evaluate`, `rescore`, `publish`, `export-settings`, `snapshot`, `judge-bench`).
`--run-evaluation`, the original's entry point, is an alias of `evaluate`; the other flags of the earlier
single command (`--rescore`, `--publish-only`, `--create-snapshot`, `--export-settings`) alias their commands.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: tools/ is on the path, the repository root is not
    sys.path.insert(0, str(ROOT))

from tools.aliases import NOTHING_TO_DO, Commands  # noqa: E402
from tools.execution import Request  # noqa: E402
from tools.execution import execute as _execute  # noqa: E402
from tools.execution import export_settings as _export_settings  # noqa: E402
from tools.execution import prepare_environment as _prepare_environment  # noqa: E402
from tools.judge_bench import calibration_options  # noqa: E402
from tools.options import (  # noqa: E402
    cache_option,
    check_regression_gate,
    compare_options,
    config_option,
    gate_option,
    judge_options,
    labels_option,
    metric_option,
    rubric_option,
    selection_options,
    verbose_option,
)

EPILOG = """
\b
Examples:
  python tools/run.py evaluate --limit 10
  python tools/run.py evaluate --dataset data.jsonl --model smollm2-135m --model org/my-model
  python tools/run.py rescore --only-failed   # re-judge the latest stored evaluations' failed rows
  python tools/run.py publish                 # push the latest stored results again
  python tools/run.py export-settings         # .env -> ZenML secret `settings` (remote steps)
  python tools/run.py snapshot evaluating-sagemaker --config configs/evaluating_sagemaker.yaml

\b
Each command's --help shows its options and more examples.

\b
Aliases (the earlier single command's flags; the options of the command go with them):
  python tools/run.py --run-evaluation [--config F] [--model M] [--limit N] ...   = evaluate
  python tools/run.py --run-evaluation --rescore [--only-failed] [--from-hub R]   = rescore
  python tools/run.py --run-evaluation --publish-only                             = publish
  python tools/run.py --export-settings [--run-evaluation ...]                    = export-settings
  python tools/run.py --create-snapshot NAME --config F                           = snapshot NAME
"""


@click.group(cls=Commands, invoke_without_command=True, epilog=EPILOG)
@click.pass_context
def main(ctx: click.Context) -> None:
    """Evaluate LLMs: vLLM batch generation, an LLM judge, tracked ZenML artifacts."""
    if ctx.meta.get("export_settings_first"):  # `--export-settings --run-evaluation ...`: both, in that order
        _prepare_environment()
        _export_settings()
    if ctx.invoked_subcommand is None:
        raise click.UsageError(NOTHING_TO_DO)


@main.command(epilog="""
\b
Examples:
  python tools/run.py evaluate --limit 10 --no-cache
  python tools/run.py evaluate --dataset data.jsonl --model smollm2-135m --model org/my-model
  python tools/run.py evaluate --config configs/evaluating_sagemaker.yaml
  python tools/run.py evaluate --rubric reference-guided
  python tools/run.py evaluate --model ./my-alpaca-finetune --prompt-template alpaca --max-tokens 512
  python tools/run.py evaluate --dataset my.csv --column instruction=question --column reference=none
  python tools/run.py evaluate --labels my-labels.jsonl   # how far the judge agrees with your labels
  python tools/run.py evaluate --fail-under accuracy=2.0 --fail-under judge_check=0.7   # exit code 3 if not met
  python tools/run.py evaluate --compare-to previous --fail-on-regression               # exit code 3 if worse
  python tools/run.py evaluate --dataset qa.jsonl --group-by category --fail-under checks=0.9 --fail-under token_f1=0.4
""")
@config_option()
@selection_options()
@judge_options()
@rubric_option()
@labels_option()
@metric_option()
@gate_option()
@compare_options()
@cache_option()
@verbose_option()
def evaluate(**options: Any) -> None:
    """Generate answers with each model, publish them, judge them, summarize."""
    check_regression_gate(options)
    _execute(Request.of("evaluate", **options))


@main.command(epilog="""
\b
Examples:
  python tools/run.py rescore                 # the latest stored generations
  python tools/run.py rescore --only-failed   # only rows of the latest evaluations without a valid verdict
  python tools/run.py rescore --from-hub me/SmolLM2-135M-Instruct-results --from-hub me/other-results
  python tools/run.py rescore --rubric my-rubric.yaml   # the same answers, judged on your rubric
  python tools/run.py rescore --labels my-labels.csv    # the judge against your labels, no generation
  python tools/run.py rescore --rubric my-rubric.yaml --compare-to previous   # what the new rubric changed
  python tools/run.py rescore --metric token_f1 --metric chrf   # these metrics of the stored answers, no judge call
""")
@config_option()
@judge_options()
@rubric_option()
@labels_option()
@metric_option()
@gate_option()
@compare_options()
@verbose_option()
@click.option("--only-failed", is_flag=True,
              help="Judge only the rows of the latest evaluations without a valid verdict, and merge.")
@click.option("--from-hub", "from_hub", multiple=True, metavar="REPO",
              help="Judge the answers published in this Hub dataset repo (repeatable).")
@cache_option("judges")
def rescore(**options: Any) -> None:
    """Judge stored answers again with the config's judge: no generation, no inference."""
    if options["only_failed"] and options["from_hub"]:
        raise click.UsageError("--only-failed judges the latest stored evaluations again, --from-hub published "
                               "answers: pass one of them.")
    check_regression_gate(options)
    _execute(Request.of("rescore", **options))


@main.command(epilog="""
\b
Examples:
  python tools/run.py publish
  python tools/run.py publish --config configs/evaluating_sagemaker.yaml   # to the Hub, as that config says
""")
@config_option()
@cache_option("publishes")
@verbose_option()
def publish(**options: Any) -> None:
    """Publish the latest stored results again (after a failed push); run nothing else."""
    _execute(Request.of("publish", **options))


@main.command("export-settings", epilog="""
\b
Examples:
  python tools/run.py export-settings
  python tools/run.py evaluate --config configs/evaluating_sagemaker.yaml   # its steps read the secret
""")
def export_settings_command() -> None:
    """Store the settings of .env / the environment as the ZenML secret `settings`, for remote steps."""
    _prepare_environment()
    _export_settings()


@main.command(epilog="""
\b
Examples:
  python tools/run.py snapshot evaluating-sagemaker --config configs/evaluating_sagemaker.yaml
  python tools/run.py snapshot smoke --limit 10
""")
@click.argument("name")
@config_option()
@selection_options()
@rubric_option()
@cache_option()
@verbose_option()
def snapshot(name: str, **options: Any) -> None:
    """Store the configured evaluation as the ZenML snapshot NAME instead of running it.

    Rerun it from the dashboard on a remote stack.
    """
    _execute(Request.of("snapshot", snapshot=name, **options))


@main.command("judge-bench", epilog="""
\b
Examples:
  python tools/run.py judge-bench --pairs ../shared/judge-labels/llmbar-natural.jsonl
  python tools/run.py judge-bench --pairs my-pairs.csv --judge smollm2-135m --limit 20
  python tools/run.py judge-bench --pairs pairs.jsonl --config configs/jury.yaml   # a jury, pointwise
  python tools/run.py judge-bench --pairs pairs.jsonl --half 2   # the half a rubric was not chosen on
  python tools/run.py judge-bench --pairs a.jsonl --calibration b.jsonl --target-agreement 0.85
\b
A pairs file (.jsonl or .csv) holds one pair a line: instruction, output_1, output_2, label (1: output_1 is
better, 2: output_2, 0: a tie); id and reference optional. A second run asks only what the judge cache lacks.
""")
@click.option("--pairs", "pairs_path", required=True, type=click.Path(path_type=Path), metavar="FILE",
              help="Human-labelled answer pairs (.jsonl or .csv).")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N pairs.")
@click.option("--half", type=click.IntRange(1, 2), help="Every other pair: 1 the 1st, 3rd, 5th...; 2 the 2nd, 4th... "
              "Choose a rubric or prompt on one half, report it on the other.")
@calibration_options
@config_option()
@judge_options()
@rubric_option()
@verbose_option()
def judge_bench(**options: Any) -> None:
    """Measure the configured judge against people: agreement on human-labelled answer pairs, judged pairwise (both
    orders) and pointwise (each answer scored alone), beside judge-free baselines."""
    from tools.judge_bench import judge_bench as _judge_bench

    _judge_bench(**options)


if __name__ == "__main__":
    main()
