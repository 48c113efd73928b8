"""The command line's options, shared by the commands of `tools/run.py`: each a decorator (or a group of them, the
first listed first in --help). Imports nothing heavy: `--help` stays instant."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import click

from tools.execution import DEFAULT_CONFIG


def config_option() -> Callable:
    return click.option(
        "--config", "config_path", type=click.Path(path_type=Path), default=DEFAULT_CONFIG,
        show_default=True, help="Run config YAML (ZenML layout: parameters, settings, steps).",
    )


_NO_CACHE = {
    "generates": "Ignore every cache: re-run every step (ZenML's step cache), generate every answer again (not the answers "
                 "an interrupted run saved) and ask the judge for every verdict again (not the judge's verdict cache; new "
                 "verdicts are still stored).",
    "judges": "Ignore every cache: re-run every step (ZenML's step cache) and ask the judge for every verdict again "
              "(not the judge's verdict cache; new verdicts are still stored).",
    "publishes": "Re-run every step (ZenML's step cache off); publishing uses no other cache.",
}


def cache_option(kind: str = "generates") -> Callable:
    return click.option("--no-cache", is_flag=True, help=_NO_CACHE[kind])


def judge_options() -> Callable:
    """--judge, --judge-model: the judge, named on the command line instead of in the config."""
    options = [
        click.option("--judge", "judge_model", metavar="JUDGE",
                     help="The judge, instead of the config's: an alias (qwen2.5-coder-1.5b, smollm2-135m), a local "
                          "model folder or a Hub id (in process; with a config whose judge is served, that server's "
                          "model name); openai:MODEL (OpenAI's API, OPENAI_API_KEY); or the URL of an OpenAI-compatible "
                          "server (e.g. http://127.0.0.1:8000/v1 of a `vllm serve`), sent JUDGE_API_KEY where it is "
                          "set and never OPENAI_API_KEY."),
        click.option("--judge-model", "judge_served_model", metavar="NAME",
                     help="With --judge URL: the served model's name (default: the one model the server lists)."),
    ]

    return _together(options)


def _check_column(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    from llm_engineering.evaluation.config_base import ConfigError
    from llm_engineering.run_overrides import parse_columns

    try:
        parse_columns(values)
    except ConfigError as error:
        raise click.BadParameter(str(error)) from None
    return values


def rubric_option() -> Callable:
    return click.option("--rubric",
                        help="The judge's rubric: task-accuracy (default), handbook (the original's wording), "
                        "handbook-score-first, reference-guided, helpfulness, or a rubric YAML file.")


def labels_option() -> Callable:
    return click.option("--labels", metavar="FILE",
                        help="Human labels (.jsonl or .csv; pointwise: id, answer, criterion, score; pairwise: id, "
                             "answer_a, answer_b, preferred): report the judge's agreement with them.")


def _check_gates(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    from llm_engineering.evaluation.report.gates import parse_gate

    for value in values:
        try:
            parse_gate(value)
        except ValueError as error:
            raise click.BadParameter(str(error)) from None
    return values


def _together(options: list[Callable]) -> Callable:
    """One decorator applying `options`, the first listed first in --help."""
    def decorate(command: Callable) -> Callable:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def gate_option() -> Callable:
    """--fail-under, --max-failed-rate: CI gates on the stored run (exit code 3)."""
    options = [
        click.option("--fail-under", "fail_under", multiple=True, metavar="METRIC=VALUE", callback=_check_gates,
                     help="CI gate (repeatable): after the run is stored, exit with code 3 if a model's METRIC is "
                          "under VALUE. METRIC: a criterion (accuracy), <criterion>_expected, similarity, "
                          "judge_check, judge_check_expected."),
        click.option("--max-failed-rate", "max_failed_rate", type=click.FloatRange(0, 1), metavar="RATE",
                     help="CI gate: exit with code 3 if a model's share of rows without a valid verdict (a judge "
                          "error, or no answer: prompt too long) is over RATE, e.g. 0.05."),
    ]

    return _together(options)


def compare_options() -> Callable:
    """--compare-to, --fail-on-regression: this run against an earlier one."""
    options = [
        click.option("--compare-to", "compare_to", metavar="RUN",
                     help="Compare with an earlier run (a run name or id, or `previous`): per model and metric, the "
                          "difference on the rows both runs scored, with a paired bootstrap 95% interval, and the "
                          "rows that changed most (console, JSON and HTML report)."),
        click.option("--fail-on-regression", is_flag=True,
                     help="CI gate (with --compare-to): exit with code 3 if a metric is lower than on the earlier "
                          "run, significantly after Holm's correction across every metric and model compared."),
    ]

    return _together(options)


def verbose_option() -> Callable:
    return click.option("--verbose", is_flag=True,
                        help="Show library warnings and engine logs on the console (by default they go to "
                             "outputs/logs/<run>.log, whose path is printed).")


def check_regression_gate(options: dict[str, Any]) -> None:
    if options.get("fail_on_regression") and not options.get("compare_to"):
        raise click.UsageError("--fail-on-regression needs --compare-to RUN (a run name or id, or `previous`).")


def selection_options() -> Callable:
    """--model, --dataset, --split, --column, --encoding, --limit, --dummy, --prompt-template, --max-tokens, --samples:
    what is evaluated, and how it is prompted."""
    options = [
        click.option("--model", "models", multiple=True,
                     help="Model alias, local folder or Hub id; BASE+ADAPTER adds a LoRA adapter (PEFT folder or "
                          "Hub id); repeat to compare models."),
        click.option("--dataset",
                     help="Hub dataset id, or a local json/jsonl/parquet/csv file or dataset folder; "
                          "embedded-conversations: the packaged two-turn rows."),
        click.option("--split", help="The dataset's split to evaluate (default: the config's, test)."),
        click.option("--column", "columns", multiple=True, metavar="ROLE=NAME", callback=_check_column,
                     help="Your column names (repeatable, a role once): instruction=NAME, reference=NAME (optional: "
                          "rows without a reference are judged on instruction and answer; reference=none: a column "
                          "called answer or output is not one), id=NAME, checks=NAME (a row's checks), category=NAME "
                          "(scores per category)."),
        click.option("--encoding", metavar="NAME",
                     help="The text encoding of a csv or json(l) dataset file (default utf-8, a BOM read as one): "
                          "latin-1, cp1252, utf-16..."),
        click.option("--group-by", "group_by", metavar="COLUMN",
                     help="Split every score per category: the rows' COLUMN (as --column category=COLUMN)."),
        click.option("--limit", type=click.IntRange(min=1), help="Evaluate only the first N rows."),
        click.option("--dummy", is_flag=True, help="Evaluate only 10 rows (a quick smoke run)."),
        click.option("--prompt-template", "prompt_template", type=click.Choice(["auto", "alpaca", "chat"]),
                     help="How the model is prompted (prompt.template): chat, the model's own chat template; alpaca, "
                          "the Alpaca template (an Alpaca fine-tune, whatever its tokenizer holds); auto (default), "
                          "chat where the tokenizer has a chat template, else alpaca."),
        click.option("--max-tokens", "max_tokens", type=click.IntRange(min=1), metavar="N",
                     help="The longest answer, in tokens (sampling.max_tokens, default 256): longer ones are cut, "
                          "counted in the summary's 'cut by max_tokens'."),
        click.option("--samples", type=click.IntRange(min=1), metavar="K",
                     help="K answers per prompt (sampling.n), each judged: intervals then include how far a model's "
                          "answers to one prompt differ, and the summary adds max, majority and pass@k."),
    ]

    return _together(options)


def metric_option() -> Callable:
    """--metric: the judge-free metrics measured, instead of the config's `metrics:`."""
    from llm_engineering.evaluation.metrics.names import METRICS

    return click.option("--metric", "metrics", multiple=True, type=click.Choice(METRICS),
                        help="A metric to measure per answer without a judge, instead of the config's list "
                             "(repeatable): " + ", ".join(METRICS) + ". Rows without a reference get none.")
