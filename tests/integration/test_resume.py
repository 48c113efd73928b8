"""Generation faults through the real CLI: Ctrl-C, SIGTERM, SIGKILL midway, a step that raises with the engine up;
then the same command again. (SIGHUP is handled by raising SIGTERM: `tests/unit/test_cli.py` holds the CLI to that.)

Real vLLM (CPU build) with the bundled model, the real ZenML local stack. The judge is the
OpenAI-compatible stub, since what is under test is generation. Two answers per prompt (`sampling.n`), so that
each signal also shows that resuming works per answer, not per prompt. The split is six one-turn rows and three
two-turn conversations after them: the SIGKILL lands once a second turn is saved, so the runs after it resume first
and second turns alike, each second turn's prompt rebuilt from its own resumed first answer.
"""

import json
import os
import re
import signal
import time
from pathlib import Path

import psutil
import pytest

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.generation.checkpoint import AnswerCheckpoint
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.infrastructure.cpu_sampler import INSTALLED
from llm_engineering.infrastructure.cpu_tuning import resolved_dtype
from llm_engineering.run_config import load_run_config
from llm_engineering.settings import get_settings
from tests.support.cli_output import reported_run
from tests.support.cli_process import group_gone, saved_answers, start_cli
from tests.support.conversations import assert_second_turns_follow_their_first

pytestmark = pytest.mark.slow

ONE_TURN = 6
CONVERSATIONS = [{"question_id": topic, "turns": [f"Name one {topic} and say only its name.",
                                                  f"Repeat the {topic} you named, then describe it."]}
                 for topic in ("fruit", "colour", "city")]
PROMPTS, SAMPLES = ONE_TURN + 2 * len(CONVERSATIONS), 2  # test rows: one per turn
ROWS = PROMPTS * SAMPLES  # answers
# Four sequences at a time, so answers finish in waves and a run can be stopped between them.
CONFIG = """
parameters:
  dataset: {{source: "{source}", limit: {rows}}}
  sampling: {{max_tokens: 48, temperature: 0.7, seed: 11, n: 2}}
  engine: {{max_num_seqs: 4}}
  judge: {{backend: openai, model: stub-judge, base_url: "{base_url}", cache: false}}
"""
# A run resumed after a kill logs this, whether its first engine call holds first turns or second turns too.
RESUMING = r"Resuming turns? 1(, 2)?: {saved} of \d+ answers"


def _split_file(repo_root, path):
    """The first six rows of the embedded split, then the conversations (`limit` counts a conversation once)."""
    embedded = (repo_root / "llm_engineering/evaluation/data/llm_twin_test.jsonl").read_text().splitlines()
    path.write_text("\n".join(embedded[:ONE_TURN] + [json.dumps(row) for row in CONVERSATIONS]) + "\n")
    return path


def _start(repo_root, config, log, **env):
    return start_cli(repo_root, ["--run-evaluation", "--config", config], log, **env)


_LIBRARY_LINE = re.compile(r"^\((EngineCore|Worker|VllmWorker-\d+|MainProcess) pid=\d+\)|Warning: |^\[W\d{4}")


def _run_log(console):
    """The run's log file, whose path the CLI printed last."""
    line = next(line for line in console.splitlines() if line.startswith("Log (library warnings, engine output): "))
    return Path(line.split(": ", 1)[1]).read_text()


def _saved(checkpoint):
    return saved_answers([checkpoint.path])


def _second_turns(saved):
    return [row for row in saved if row["id"].endswith("/turn-2")]


def _stop_after(process, checkpoint, rows, sig, timeout=600, pid_alone=False, second_turn=False):
    """Send `sig` once `rows` are saved (with `second_turn`, a second turn among them): to the whole process group (as
    a terminal does), or to the CLI's pid alone (as the out-of-memory killer or an orchestrator does). Returns the
    exit code and the command lines of the CLI's descendants just before the signal."""
    deadline = time.monotonic() + timeout
    while len(saved := _saved(checkpoint)) < rows or (second_turn and not _second_turns(saved)):
        assert process.poll() is None, "the run ended before it could be stopped midway"
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.1)
    descendants = _descendants(process.pid)
    if pid_alone:
        os.kill(process.pid, sig)
    else:
        os.killpg(process.pid, sig)
    return process.wait(timeout=180), descendants


def _descendants(pid):
    """`(pid, name)` of each live descendant of `pid` (a process that ended meanwhile is skipped)."""
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            found.append((child.pid, child.name()))
        except psutil.Error:
            pass
    return found


def _alive(pgid):
    """`(pid, name)` of each live process of group `pgid` (one that ends while it is listed is skipped)."""
    found = []
    for process in psutil.process_iter(["name"]):
        if _in_group(process, pgid) and process.info["name"] is not None:
            found.append((process.pid, process.info["name"]))
    return found


def _in_group(process, pgid):
    try:
        return os.getpgid(process.pid) == pgid
    except OSError:
        return False


def _session_engine(config):
    """The config without `max_num_seqs` (a scheduling knob the checkpoint's key leaves out): this process's
    session engine runs it."""
    without = config.replace("  engine: {max_num_seqs: 4}\n", "")
    assert "max_num_seqs" not in without
    return without


def _run_ids():
    from zenml.client import Client

    return {run.id for run in Client().list_pipeline_runs(size=1000).items}


@pytest.mark.timeout(900)
def test_interrupted_then_killed_generation_resumes_and_loses_no_row(repo_root, tmp_path, run_cli, monkeypatch):
    from zenml.client import Client

    from llm_engineering.infrastructure.zenml_runs import step_output
    from tests.support.openai_stub import OpenAIStub

    source = _split_file(repo_root, tmp_path / "split.jsonl")
    with OpenAIStub() as judge:
        config = tmp_path / "run.yaml"
        config.write_text(CONFIG.format(source=source, rows=ONE_TURN + len(CONVERSATIONS), base_url=judge.base_url))
        evaluation = load_run_config(config).evaluation
        model = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR)
        engine = evaluation.engine.model_copy(update={"dtype": resolved_dtype(evaluation.engine)[0]})
        checkpoint = AnswerCheckpoint(get_settings().CHECKPOINT_DIR, "smollm2-135m", model.path,
                                      sampling=evaluation.sampling, engine=engine)
        checkpoint.reset()

        # 1. Ctrl-C after a few answers: a clean stop, a resumable message, no process left behind.
        with open(tmp_path / "interrupted.log", "w") as log:
            first = _start(repo_root, config, log)
            assert _stop_after(first, checkpoint, 3, signal.SIGINT)[0] == 130
        assert group_gone(first.pid), "processes of the interrupted run are still alive"
        console = (tmp_path / "interrupted.log").read_text()
        assert "Interrupted. Every answer generated so far is saved" in console
        assert "Step generate_answers has started" in re.sub(r"\x1b\[[0-9;]*m", "", console)  # step progress shown
        # A quiet console: the libraries' warnings and the engine's log are in the run's log file, not here.
        assert not [line for line in console.splitlines() if _LIBRARY_LINE.search(line)]
        run_log = _run_log(console)
        assert [line for line in run_log.splitlines() if _LIBRARY_LINE.search(line) and "WARNING" in line]
        assert INSTALLED in run_log  # the engine processes loaded the project's vLLM plugins (the CPU top-p)
        after_interrupt = len(_saved(checkpoint))
        assert 3 <= after_interrupt < ROWS

        # 2. SIGTERM to the CLI's pid alone (an orchestrator's or a scheduler's stop; a closed terminal's SIGHUP is
        # turned into it) a few answers later: the step is interrupted, the engine shut down, every answer kept,
        # nothing left running 10 s later.
        with open(tmp_path / "terminated.log", "w") as log:
            stopped = _start(repo_root, config, log)
            code, descendants = _stop_after(stopped, checkpoint, after_interrupt + 2, signal.SIGTERM, pid_alone=True)
        console = (tmp_path / "terminated.log").read_text()
        assert code == 1, console[-3000:]
        assert "Step generate_answers failed: The execution was interrupted" in console, console[-3000:]
        # On CPU the engine runs in the CLI's process (engine.in_process): no engine process to leave behind.
        assert not [name for _, name in descendants if name.startswith("VLLM::")], descendants
        assert group_gone(stopped.pid, timeout=10), f"alive 10 s after SIGTERM: {_alive(stopped.pid)}"
        assert re.search(RESUMING.format(saved=after_interrupt), console), console[-3000:]
        after_interrupt = len(_saved(checkpoint))

        # 3. SIGKILL of the CLI's pid alone (the out-of-memory killer's way) a few answers later, once a second turn is
        # saved, its engine in vLLM's own processes (as on a GPU; `in_process` is no part of the checkpoint's key): its
        # vLLM engine core and worker are not told, yet must end with it (engine_lifetime), not spin on.
        in_processes = tmp_path / "in-processes.yaml"
        in_processes.write_text(config.read_text().replace("{max_num_seqs: 4}", "{max_num_seqs: 4, in_process: false}"))
        assert "in_process: false" in in_processes.read_text()
        with open(tmp_path / "killed.log", "w") as log:
            second = _start(repo_root, in_processes, log)
            code, descendants = _stop_after(second, checkpoint, after_interrupt + 2, signal.SIGKILL, pid_alone=True,
                                            second_turn=True)
        assert code == -signal.SIGKILL
        assert any(name.startswith("VLLM::") for _, name in descendants), descendants  # the engine ran as its child
        assert group_gone(second.pid, timeout=10), f"alive 10 s after the CLI was killed: {_alive(second.pid)}"
        assert re.search(RESUMING.format(saved=after_interrupt), (tmp_path / "killed.log").read_text())
        after_kill = len(_saved(checkpoint))
        assert after_interrupt + 2 <= after_kill < ROWS
        assert 1 <= len(_second_turns(_saved(checkpoint))) < len(CONVERSATIONS) * SAMPLES  # killed during them

        # 4. A step that raises after generation, in this process (`run_cli`) with the session's engine: publishing
        # into an output folder whose `hub` is a file, after the missing answers of a shorter split (all but the last
        # conversation) were generated. The command fails naming the step, and the answers generated before the failure
        # are kept. (That a failing step's CLI ends with nothing left running is step 2's: its SIGTERM fails
        # generate_answers.) The config without `max_num_seqs`, a scheduling knob the checkpoint's key leaves out, so
        # the same checkpoint is found.
        last = CONVERSATIONS[-1]["question_id"]
        rows = ROWS - 2 * SAMPLES  # the answers of the shorter split
        saved_of_shorter = len([row for row in _saved(checkpoint) if not row["id"].startswith(f"{last}/")])
        broken_output = tmp_path / "broken-output"
        broken_output.mkdir()
        (broken_output / "hub").write_text("a file where the local results repos go")
        shorter = tmp_path / "shorter.yaml"
        shorter.write_text(_session_engine(CONFIG.format(source=source, rows=ONE_TURN + len(CONVERSATIONS) - 1,
                                                         base_url=judge.base_url)))
        runs_before = _run_ids()
        with monkeypatch.context() as patched:
            patched.setenv("OUTPUT_DIR", str(broken_output))
            result = run_cli("--run-evaluation", "--config", shorter)
        assert result.exit_code == 1, result.output[-3000:]
        assert "Step publish_results failed" in result.stderr, result.output[-3000:]
        (failed_run,) = _run_ids() - runs_before
        failed_stats = step_output(Client().get_pipeline_run(failed_run), "generate_answers", col.GENERATION_STATS)
        assert (failed_stats.resumed, failed_stats.generated) == (saved_of_shorter, rows - saved_of_shorter)
        kept = _saved(checkpoint)
        assert len(kept) == after_kill + rows - saved_of_shorter < ROWS

        # 5. The command again, in this process with the session's engine and the whole split: only the missing rows
        # are generated, and the run completes.
        config.write_text(_session_engine(CONFIG.format(source=source, rows=ONE_TURN + len(CONVERSATIONS),
                                                        base_url=judge.base_url)))
        run, _ = reported_run(run_cli("--run-evaluation", "--config", config))

    answers = step_output(run, "generate_answers", col.GENERATIONS)
    run_stats = step_output(run, "generate_answers", col.GENERATION_STATS)
    assert (run_stats.resumed, run_stats.generated) == (len(kept), ROWS - len(kept))
    test_split = step_output(run, "load_test_split", col.TEST_SPLIT)
    # every row's two answers, once each, in order
    assert answers[col.ID] == [row_id for row_id in test_split[col.ID] for _ in range(SAMPLES)]
    assert answers[col.SAMPLE] == list(range(SAMPLES)) * PROMPTS
    assert all(answer.strip() for answer in answers[col.ANSWER])
    by_answer = {(i, s): a for i, s, a in zip(answers[col.ID], answers[col.SAMPLE], answers[col.ANSWER])}
    assert all(by_answer[row["id"], row["sample"]] == row["answer"] for row in kept)  # kept answers not regenerated
    assert sum(by_answer[i, 0] != by_answer[i, 1] for i in test_split[col.ID]) >= PROMPTS // 2  # samples differ
    assert_second_turns_follow_their_first(answers)  # resumed or generated, after their own resumed first answers
    saved = _saved(checkpoint)
    assert sorted((row["id"], row["sample"]) for row in saved) == sorted(by_answer)  # no answer saved twice
