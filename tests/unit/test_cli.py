import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.small_run import SMALL_JUDGE


def test_help_shows_examples_without_importing_heavy_libraries(repo_root):
    result = subprocess.run([sys.executable, str(repo_root / "tools" / "run.py"), "--help"],
                            capture_output=True, text=True, cwd=repo_root, timeout=120)
    assert result.returncode == 0
    assert "--run-evaluation" in result.stdout and "--rescore" in result.stdout
    assert "Examples:" in result.stdout
    # --help must stay instant: vLLM, torch and ZenML take seconds each to import.
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['run.py', '--help']\n"
        "try:\n    runpy.run_path('tools/run.py', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in ('vllm', 'torch', 'zenml', 'datasets') if m in sys.modules))\n"
    )
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=repo_root, timeout=60)
    assert imported.stdout.strip().splitlines()[-1] == "[]"


def test_without_run_evaluation_nothing_runs(run_cli):
    result = run_cli("--limit", "2")
    assert result.exit_code == 2
    assert "pass --run-evaluation" in result.stderr


@pytest.mark.parametrize(
    "parameters, message",
    [
        ("judge:\n    modle: x", "parameters.judge.modle: unknown key"),
        ("publish: {target: hub}", "HUGGINGFACE_ACCESS_TOKEN is not set"),
        ("judge: {backend: openai, model: gpt-4o-mini}", "OPENAI_API_KEY is not set"),
    ],
    ids=["misspelt-key", "hub-without-token", "openai-without-key"],
)
def test_bad_settings_stop_before_any_work(run_cli, tmp_path, parameters, message):
    config = tmp_path / "run.yaml"
    config.write_text(f"parameters:\n  {parameters}\n")
    result = run_cli("--run-evaluation", "--config", config)
    assert result.exit_code == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("text, message", [
    ('{"id": "q001", "answer": "a", "criterion": "accuracy", "score": 2}\n{"id": "q002", "answer": "b"}\n',
     "line 2: the columns are neither kind (as pointwise labels, missing ['criterion', 'score']"),
    ('{"id": "q001", "answer": "a", "criterion": "helpfulness", "score": 2}\n',
     "line 1: the labels score 'helpfulness', which rubric 'task-accuracy' lacks (its criteria: accuracy, style)"),
], ids=["bad-line", "criterion-not-in-rubric"])
def test_bad_labels_stop_before_any_work_with_the_file_and_the_line(run_cli, tmp_path, text, message):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(text)
    result = run_cli("evaluate", "--labels", labels, "--limit", "2")
    assert result.exit_code == 1
    assert f"{labels}, {message}" in result.stderr
    assert "Traceback" not in result.stderr and "Initiating a new run" not in result.stdout + result.stderr


def test_compare_to_an_unknown_run_stops_before_any_work(run_cli, tmp_path):
    """Named before the checks of this machine's state: here a KV cache no machine has, which would stop it too."""
    config = tmp_path / "run.yaml"
    config.write_text("parameters:\n  engine: {cpu_kvcache_space_gib: 100000}\n")
    result = run_cli("evaluate", "--config", config, "--compare-to", "no-such-run-anywhere", "--limit", "2")
    assert result.exit_code == 1
    assert "--compare-to no-such-run-anywhere: no such run in the ZenML store" in result.stderr
    assert "cpu_kvcache_space_gib" not in result.stderr
    assert "Initiating a new run" not in result.stdout + result.stderr


def test_unknown_model_stops_before_any_work(run_cli):
    result = run_cli("--run-evaluation", "--model", "no such model")
    assert result.exit_code == 1
    assert "Unknown model 'no such model'" in result.stderr



def _pipeline_runs() -> int:
    from zenml.client import Client

    return Client().list_pipeline_runs(size=1).total


BAD_ROWS = ('{"id": "a", "instruction": "What is RAG?", "output": "Retrieval."}\n'
            '{"id": "b", "instruction": "", "output": "x"}\n')


@pytest.mark.parametrize("text, args, message", [
    (BAD_ROWS, (), "The test split has 1 bad row(s):\n  - row 1 (id b): empty or non-text 'instruction'"),
    ('{"question_text": "What is RAG?"}\n', (),
     "The test split has no instruction column: looked for ['instruction', 'question', 'prompt'], found "
     "['question_text']. Name yours with --column instruction=NAME"),
    ('{"instruction": "What is RAG?"}\n', ("--split", "validation"), "--split validation (dataset.split): "),
    ('{"instruction": "What is RAG?", "answer": "x"}\n', ("--column", "reference=instruction"),
     "The column 'instruction' would fill two roles"),
    ('{"instruction": "What is RAG?"}\n', ("--rubric", "reference-guided"),
     "1 of 1 rows have no reference answer (ids ['0']), but rubric 'reference-guided' judges against one"),
], ids=["bad-row", "missing-column", "split-of-a-file", "shared-column", "rubric-needs-references"])
def test_dataset_mistakes_stop_in_the_checks_before_any_pipeline_run(run_cli, tmp_path, text, args, message):
    data = tmp_path / "rows.jsonl"
    data.write_text(text)
    runs = _pipeline_runs()
    result = run_cli("evaluate", "--dataset", data, *args)
    assert result.exit_code == 1
    assert message in result.stderr
    assert _pipeline_runs() == runs  # no run created, not even a failed one
    assert "Initiating a new run" not in result.stdout + result.stderr and "Traceback" not in result.stderr


def test_a_failure_in_load_test_split_does_not_advise_rescore(run_cli, tmp_path, monkeypatch):
    """Where the step fails after the checks passed (a file changed since, a remote step reading its own copy), the
    message does not send the user to `rescore`, which would judge an earlier run's answers."""
    import llm_engineering.preflight

    monkeypatch.setattr(llm_engineering.preflight, "check_test_split", lambda *args: None)
    data = tmp_path / "rows.jsonl"
    data.write_text(BAD_ROWS)
    result = run_cli("--run-evaluation", "--dataset", data, *SMALL_JUDGE)
    assert result.exit_code == 1
    assert "Step load_test_split failed: The test split has 1 bad row(s)" in result.stderr
    assert "row 1 (id b): empty or non-text 'instruction'" in result.stderr
    assert "run the same command again (it resumes)." in result.stderr and "rescore" not in result.stderr
    assert "Traceback" not in result.stderr.split("Error:")[-1]


# Argument parsing of the subcommands and the legacy flags: the heavy work (`_execute`, which
# loads the config, checks it and runs a pipeline) is replaced by a recorder; nothing else is.

@pytest.fixture
def cli(repo_root, monkeypatch):
    """tools/run.py as a module, with the work it would start recorded instead of done."""
    spec = importlib.util.spec_from_file_location("run_cli_under_test", repo_root / "tools" / "run.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    module.requests, module.exports = [], []
    monkeypatch.setattr(module, "_execute", module.requests.append)
    monkeypatch.setattr(module, "_export_settings", lambda: module.exports.append(True))
    return module


def _invoke(cli, *args):
    return CliRunner().invoke(cli.main, list(args))


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--run-evaluation"], {"mode": "evaluate"}),
        (["--run-evaluation", "--limit", "2", "--model", "a", "--model", "b", "--dataset", "d.jsonl", "--dummy",
          "--no-cache", "--config", "c.yaml"],
         {"mode": "evaluate", "limit": 2, "models": ("a", "b"), "dataset": "d.jsonl", "dummy": True, "no_cache": True,
          "config_path": Path("c.yaml")}),
        (["--run-evaluation", "--rescore"], {"mode": "rescore"}),
        (["--run-evaluation", "--rescore", "--only-failed"], {"mode": "rescore", "only_failed": True}),
        (["--run-evaluation", "--rescore", "--from-hub", "me/a", "--from-hub", "me/b"],
         {"mode": "rescore", "from_hub": ("me/a", "me/b")}),
        (["--run-evaluation", "--publish-only"], {"mode": "publish"}),
        (["--run-evaluation", "--rescore", "--publish-only"], {"mode": "publish"}),  # as before: publishing wins
        (["--create-snapshot", "snap", "--config", "c.yaml"],
         {"mode": "snapshot", "snapshot": "snap", "config_path": Path("c.yaml")}),
        (["--run-evaluation", "--create-snapshot", "snap"], {"mode": "snapshot", "snapshot": "snap"}),
    ],
    ids=["evaluate", "evaluate-options", "rescore", "only-failed", "from-hub", "publish-only", "publish-wins",
         "snapshot", "snapshot-with-run-evaluation"],
)
def test_legacy_flags_dispatch_to_the_same_work_as_the_commands(cli, args, expected):
    result = _invoke(cli, *args)
    assert result.exit_code == 0, result.output
    assert cli.requests == [cli.Request.of(**expected)]
    assert cli.exports == []


@pytest.mark.parametrize(
    "args, expected",
    [
        (["evaluate"], {"mode": "evaluate"}),
        (["evaluate", "--limit", "2", "--model", "a", "--model", "b", "--dataset", "d.jsonl", "--dummy", "--no-cache",
          "--config", "c.yaml"],
         {"mode": "evaluate", "limit": 2, "models": ("a", "b"), "dataset": "d.jsonl", "dummy": True, "no_cache": True,
          "config_path": Path("c.yaml")}),
        (["rescore"], {"mode": "rescore"}),
        (["rescore", "--only-failed", "--no-cache"], {"mode": "rescore", "only_failed": True, "no_cache": True}),
        (["rescore", "--from-hub", "me/a", "--from-hub", "me/b"], {"mode": "rescore", "from_hub": ("me/a", "me/b")}),
        (["evaluate", "--labels", "l.jsonl", "--rubric", "helpfulness"],
         {"mode": "evaluate", "labels": "l.jsonl", "rubric": "helpfulness"}),
        (["rescore", "--labels", "l.csv"], {"mode": "rescore", "labels": "l.csv"}),
        (["publish", "--config", "c.yaml"], {"mode": "publish", "config_path": Path("c.yaml")}),
        (["snapshot", "snap", "--limit", "3"], {"mode": "snapshot", "snapshot": "snap", "limit": 3}),
        (["evaluate", "--compare-to", "previous", "--fail-on-regression", "--verbose"],
         {"mode": "evaluate", "compare_to": "previous", "fail_on_regression": True, "verbose": True}),
        (["rescore", "--compare-to", "run-1"], {"mode": "rescore", "compare_to": "run-1"}),
        (["evaluate", "--split", "validation", "--column", "instruction=q", "--column", "reference=gold",
          "--judge", "http://127.0.0.1:8000/v1", "--judge-model", "judge"],
         {"mode": "evaluate", "split": "validation", "columns": ("instruction=q", "reference=gold"),
          "judge_model": "http://127.0.0.1:8000/v1", "judge_served_model": "judge"}),
        (["rescore", "--judge", "openai:gpt-4o-mini"], {"mode": "rescore", "judge_model": "openai:gpt-4o-mini"}),
        (["evaluate", "--prompt-template", "alpaca", "--max-tokens", "64", "--encoding", "latin-1", "--column",
          "reference=none"],
         {"mode": "evaluate", "prompt_template": "alpaca", "max_tokens": 64, "encoding": "latin-1",
          "columns": ("reference=none",)}),
        (["snapshot", "snap", "--prompt-template", "chat", "--max-tokens", "512"],
         {"mode": "snapshot", "snapshot": "snap", "prompt_template": "chat", "max_tokens": 512}),
    ],
)
def test_commands_parse_their_options(cli, args, expected):
    result = _invoke(cli, *args)
    assert result.exit_code == 0, result.output
    assert cli.requests == [cli.Request.of(**expected)]


def test_export_settings_alone_exports_and_runs_nothing(cli):
    for args in (["export-settings"], ["--export-settings"]):
        result = _invoke(cli, *args)
        assert result.exit_code == 0, result.output
    assert cli.exports == [True, True] and cli.requests == []


def test_legacy_export_settings_before_a_run_exports_then_runs(cli):
    result = _invoke(cli, "--export-settings", "--run-evaluation", "--limit", "2")
    assert result.exit_code == 0, result.output
    assert cli.exports == [True] and cli.requests == [cli.Request.of("evaluate", limit=2)]


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "pass --run-evaluation"),
        (["--limit", "2"], "pass --run-evaluation"),
        (["--create-snapshot", "s", "--rescore"], "--create-snapshot stores the evaluation pipeline: not with --rescore"),
        (["--create-snapshot", "s", "--publish-only"], "not with --rescore or --publish-only"),
        (["--run-evaluation", "--only-failed"], "--only-failed and --from-hub go with --rescore."),
        (["--run-evaluation", "--from-hub", "me/a"], "--only-failed and --from-hub go with --rescore."),
        (["--limit", "2", "evaluate"], "--limit: options go after the command"),
        (["--run-evaluation", "rescore"], "--run-evaluation: options go after the command"),
        (["rescore", "--only-failed", "--from-hub", "me/a"], "pass one of them"),
        (["evaluate", "--only-failed"], "No such option '--only-failed'"),
        (["evaluate", "--rescore"], "No such option '--rescore'"),
        (["publish", "--model", "a"], "No such option '--model'"),
        (["rescore", "--limit", "2"], "No such option '--limit'"),
        (["snapshot"], "Missing argument 'NAME'"),
        (["evaluate", "--limit", "0"], "0 is not in the range x>=1"),
        (["evaluate", "--fail-on-regression"], "--fail-on-regression needs --compare-to RUN"),
        (["publish", "--compare-to", "previous"], "No such option '--compare-to'"),
        (["evaluate", "--column", "instruction=a", "--column", "instruction=b"],
         "--column instruction= is given 2 times (a, b): a role has one column; give --column instruction=NAME once."),
        (["evaluate", "--prompt-template", "jinja"], "'jinja' is not one of 'auto', 'alpaca', 'chat'"),
        (["evaluate", "--max-tokens", "0"], "0 is not in the range x>=1"),
        (["rescore", "--max-tokens", "64"], "No such option '--max-tokens'"),
    ],
)
def test_flag_combinations_that_make_no_sense_are_usage_errors(cli, args, message):
    result = _invoke(cli, *args)
    assert result.exit_code == 2
    assert message in result.output
    assert cli.requests == [] and cli.exports == []


@pytest.mark.parametrize("command", ["evaluate", "rescore", "publish", "export-settings", "snapshot"])
def test_every_command_has_help_with_examples(cli, command):
    result = _invoke(cli, command, "--help")
    assert result.exit_code == 0
    assert "Examples:" in result.output and f"python tools/run.py {command}" in result.output


def test_a_store_locked_past_zenmls_wait_is_named_with_the_fix(run_cli, monkeypatch):
    # What is under test is the message: the real lock and ZenML's wait are in test_store_busy.py.
    from sqlalchemy.exc import OperationalError

    import tools.execution

    def locked(*args, **kwargs):
        raise OperationalError("INSERT INTO pipeline_run ...", {}, Exception("database is locked"))

    monkeypatch.setattr(tools.execution, "launch", locked)
    result = run_cli("evaluate", "--limit", "2", *SMALL_JUDGE)
    assert result.exit_code == 1
    assert "The ZenML store is locked by another process" in result.stderr
    assert "run the same command again once it is free" in result.stderr and "Store: sqlite:///" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_kv_cache_larger_than_this_machines_memory_stops_before_any_work(run_cli, tmp_path):
    config = tmp_path / "run.yaml"
    # 100 TB: on no machine here. The judge named: `auto` takes the 1.5B judge where the CPU has fast bf16, and the
    # message names the largest model's weights.
    config.write_text("parameters:\n  engine: {cpu_kvcache_space_gib: 100000}\n  judge: {model: smollm2-135m}\n")
    result = run_cli("evaluate", "--config", config, "--limit", "2")
    assert result.exit_code == 1, result.output[-3000:]
    assert "engine.cpu_kvcache_space_gib = 100000 GiB of KV cache beside smollm2-135m's weights" in result.stderr
    assert "of memory available now: lower engine.cpu_kvcache_space_gib to " in result.stderr
    assert "Initiating a new run" not in result.stdout + result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("started_with, ends_with", [("SIG_DFL", "terminated"), ("SIG_IGN", "still running")])
def test_a_hang_up_stops_the_cli_as_sigterm_does_unless_it_was_started_under_nohup(repo_root, started_with, ends_with):
    """SIGHUP (a closed terminal) reaches the CLI's SIGTERM handling, where the real run's SIGTERM is tested end to
    end (`tests/integration/test_resume.py`); a process started to ignore it (nohup) goes on. The probe sets what it
    was started with itself: the suite itself may run under nohup, whose ignored SIGHUP every child inherits."""
    probe = (
        "import signal, sys\n"
        "from tools.execution import handle_hang_up_as_terminate\n"
        f"signal.signal(signal.SIGHUP, signal.{started_with})\n"
        "signal.signal(signal.SIGTERM, lambda *_: (print('terminated', flush=True), sys.exit(0)))\n"
        "handle_hang_up_as_terminate()\n"
        "signal.raise_signal(signal.SIGHUP)\n"
        "print('still running', flush=True)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=repo_root, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == ends_with
