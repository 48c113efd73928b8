"""The `ray` engine for real, through the CLI, the config and the generate_answers step: Ray Data LLM on a
local Ray cluster (the shipped config's engine block, one replica here), the bundled model; a first run killed
(SIGKILL, its pid alone) once it has saved the first turn of a two-turn conversation, whose cluster must not outlive
it; the second resumes, asking the replicas of its one cluster for the six one-turn rows' missing answers and the
conversation's second turn, after the first's answer, at once.

Both runs hold a canary Hub token: it reaches the replica's engine through the cluster's own environment, and no file
the runs wrote holds it: outputs, the ZenML store and artifact store, the caches, and Ray's session folders (Ray's
runtime-env agent logs a runtime env whole, so the token must never travel in one).

The killed run is a CLI subprocess; the resuming one runs in this process (`run_cli`), its cluster started and
stopped by this process. The ray backend frees the pooled engine before its replicas start, so the test is marked
`own_engine` (it runs after the tests on the session's engine). The judge is the OpenAI-compatible stub: what is
under test is generation. Replica engine starts dominate (about half a minute each here).
"""

import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import psutil
import pytest
import yaml
from transformers import AutoTokenizer

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.generation.checkpoint import AnswerCheckpoint
from llm_engineering.evaluation.generation.dataset import read_test_split, with_prompts
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.infrastructure.cpu_tuning import resolved_dtype
from llm_engineering.infrastructure.zenml_runs import step_output
from llm_engineering.run_config import load_run_config
from llm_engineering.settings import get_settings
from tests.support.cli_output import reported_run
from tests.support.cli_process import saved_answers, start_cli
from tests.support.conversations import assert_second_turns_follow_their_first
from tests.support.openai_stub import OpenAIStub

pytestmark = [pytest.mark.slow, pytest.mark.own_engine]

ONE_TURN = 6
CONVERSATION = {"question_id": "colour", "turns": ["Name one colour and say only its name.",
                                                   "Repeat exactly the colour you named before."]}
ROWS = ONE_TURN + len(CONVERSATION["turns"])  # test rows, one answer each
CANARY = "hf_canaryRayToken0123456789"  # the Hub token of both runs: a local model, so no download needs it


def _orphaned_engine_processes(timeout):
    """vLLM processes of this test session (its ZenML store in their environment) whose parent is gone, after
    up to `timeout` seconds for them to end."""
    marker = f"ZENML_CONFIG_PATH={os.environ['ZENML_CONFIG_PATH']}".encode()
    deadline = time.monotonic() + timeout
    while True:
        found = []
        for process in psutil.process_iter(["name", "ppid"]):
            try:
                if (process.info["name"] or "").startswith("VLLM::") and process.info["ppid"] == 1 and \
                        marker in Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0"):
                    found.append((process.pid, process.info["name"]))
            except (OSError, psutil.Error):
                pass
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def _still_running(processes, timeout):
    """Those of `processes` still running (zombies aside) after up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        running = []
        for process in processes:
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    running.append((process.pid, process.name()))
            except psutil.Error:
                pass
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.5)


def _names(processes):
    """The names of those of `processes` still running (one may end between listing and reading)."""
    names = []
    for process in processes:
        try:
            names.append(process.name())
        except psutil.Error:
            pass
    return names


def _holds_canary(process):
    """Whether `process` has the canary token in its environment (HF_TOKEN, as a download reads it)."""
    try:
        return f"HF_TOKEN={CANARY}".encode() in Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _watch(root, names, engines_with_token):
    """Adds the names of `root`'s descendants running now to `names`, and the pids of those that are vLLM engines
    holding the canary token in their environment (where a gated model's download reads it) to `engines_with_token`."""
    try:
        processes = psutil.Process(root).children(recursive=True)
    except psutil.Error:
        return
    for process in processes:
        for name in _names([process]):
            names.add(name)
            if name.startswith("VLLM::") and _holds_canary(process):
                engines_with_token.add(process.pid)


def _environments(processes):
    """Per process, for a failure's message: its name, its parent's pid, how many bytes of its initial environment
    /proc shows, and whether HF_TOKEN is among them with the canary (never the value itself)."""
    found = []
    for process in processes:
        try:
            entries = Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
            token = [entry for entry in entries if entry.startswith(b"HF_TOKEN=")]
            found.append((process.pid, process.ppid(), process.name(), sum(map(len, entries)),
                          "HF_TOKEN: canary" if f"HF_TOKEN={CANARY}".encode() in token else
                          "HF_TOKEN: another value" if token else "no HF_TOKEN"))
        except (OSError, psutil.Error) as error:
            found.append((process.pid, type(error).__name__))
    return found


def _files_holding(text, places):
    """The files under `places` whose bytes hold `text`."""
    return [str(path) for place in places for path in Path(str(place)).rglob("*")
            if path.is_file() and not path.is_symlink() and text.encode() in path.read_bytes()]


def _ray_daemons():
    return {p.pid for p in psutil.process_iter(["cmdline"]) if any(
        part.endswith(("raylet", "gcs_server")) for part in (p.info["cmdline"] or [])[:1])}


@pytest.mark.timeout(900)
def test_ray_config_generates_through_the_step_and_resumes_from_the_checkpoint(repo_root, tmp_path, run_cli,
                                                                                monkeypatch):
    from zenml.client import Client
    from zenml.config.global_config import GlobalConfiguration

    from llm_engineering.infrastructure import ray_engine

    # The runs' Ray session folders (logs included) in a folder of this test's own, short enough for Ray's sockets.
    ray_temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    monkeypatch.setenv("RAY_TMPDIR", str(ray_temp))
    monkeypatch.setenv("HUGGINGFACE_ACCESS_TOKEN", CANARY)
    # Processes that retitle themselves (vLLM's "VLLM::EngineCore", Ray's "ray::...") through `setproctitle` may
    # write the title over their initial environment, which /proc/<pid>/environ shows, depending on how the
    # environment was laid out (seen in CI, not here). SPT_NOENV keeps the title within argv, so the environment a
    # process was started with stays readable; it changes nothing of what the processes inherit.
    monkeypatch.setenv("SPT_NOENV", "1")
    shipped = yaml.safe_load((repo_root / "configs" / "evaluating_ray.yaml").read_text())
    engine = {**shipped["parameters"]["engine"], "cpu_kvcache_space_gib": 1}
    # One replica on both cores: two of one core each start their engines side by side on this 2-core machine,
    # twice as slowly (the two-replica split is the shipped config's; row routing is unit-tested).
    engine["ray"] = {**engine["ray"], "replicas": 1, "cpus_per_replica": 2, "batch_size": 1, "max_concurrent_batches": 2}
    with OpenAIStub() as judge:
        data = tmp_path / "mixed.jsonl"
        embedded = (repo_root / "llm_engineering/evaluation/data/llm_twin_test.jsonl").read_text().splitlines()
        data.write_text("\n".join([json.dumps(CONVERSATION)] + embedded[:ONE_TURN]) + "\n")  # its first turn first
        config = tmp_path / "ray.yaml"
        config.write_text(yaml.safe_dump({"enable_cache": False, "parameters": {
            "dataset": {"source": str(data)}, "sampling": {"max_tokens": 24}, "engine": engine,
            "judge": {"backend": "openai", "model": "stub-judge", "base_url": judge.base_url, "cache": False},
            "judge_check": {"rows": 0}, "similarity": {"enabled": False},
        }}))
        evaluation = load_run_config(config).evaluation
        model = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR)
        split = with_prompts(read_test_split(evaluation.dataset), evaluation.prompt)
        engine = evaluation.engine.model_copy(update={"dtype": resolved_dtype(evaluation.engine)[0]})  # as the step keys it
        checkpoint = AnswerCheckpoint(get_settings().CHECKPOINT_DIR, "smollm2-135m", model.path,
                                      sampling=evaluation.sampling, engine=engine)
        checkpoint.reset()
        daemons = _ray_daemons()
        command = ["evaluate", "--config", str(config)]

        # 1. Killed with SIGKILL (the out-of-memory killer's way) once the conversation's first turn is saved: nothing
        # of its local cluster (GCS, raylet, agents, workers, the replica's engine) is left 10 s later.
        with open(tmp_path / "killed.log", "w") as log:
            killed = start_cli(repo_root, command, log)
            # Watched while the run goes: a turn's replica engine may have ended by the time the turn's answer is
            # saved (each turn builds its replicas), so the names and the token are read as each process is seen.
            names, engines_with_token = set(), set()
            while "colour/turn-1" not in {line["id"] for line in saved_answers([checkpoint.path])}:
                assert killed.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
                _watch(killed.pid, names, engines_with_token)
                time.sleep(0.1)
            cluster = psutil.Process(killed.pid).children(recursive=True)
            names.update(_names(cluster))
            seen = _environments(cluster) if not engines_with_token else []  # what the failure message shows
            os.kill(killed.pid, signal.SIGKILL)
            killed.wait()
        assert "raylet" in names and any(name.startswith("VLLM::") for name in names), names
        assert engines_with_token, f"the replica's engine runs without the Hub token; the cluster's processes: {seen}"
        # On CPU the replica's engine core runs its worker itself (`vllm_setup.replica_cpu_environment`): no worker process.
        assert not any(name.startswith("VLLM::Worker") for name in names), names
        assert not _still_running(cluster, timeout=10), "alive 10 s after the run was killed"
        kept = saved_answers([checkpoint.path])
        assert 1 <= len(kept) < ROWS

        # 2. The same command again (in this process) resumes those answers and generates the rest, the second turn
        # with the missing first turns: one local cluster, one set of replicas.
        clusters, cluster_of = [], ray_engine.ray_cluster
        monkeypatch.setattr(ray_engine, "ray_cluster", lambda *args: clusters.append(args) or cluster_of(*args))
        result = run_cli(*command)
    run, _ = reported_run(result)
    generations = step_output(run, "generate_answers", col.GENERATIONS)
    (stats,) = [a.load() for a in run.steps["generate_answers"].outputs[col.GENERATION_STATS]]

    assert generations[col.ID] == split[col.ID]  # every input id exactly once, in input order
    assert split[col.ID][:2] == ["colour/turn-1", "colour/turn-2"]
    assert_second_turns_follow_their_first(generations)  # asked after the first, with its resumed answer
    assert (stats.resumed, stats.generated) == (len(kept), ROWS - len(kept))
    assert len(clusters) == 1  # the second turn asked of the same replicas as the missing first turns
    by_id = dict(zip(generations[col.ID], generations[col.ANSWER]))
    assert all(by_id[line["id"]] == line["answer"] for line in kept)  # kept answers were not generated again
    fresh = generations.filter(lambda row: row[col.ID] not in {line["id"] for line in kept})
    assert len(fresh) == ROWS - len(kept) and all(answer.strip() for answer in fresh[col.ANSWER])
    assert set(fresh[col.FINISH_REASON]) <= {"stop", "length"} and 0 < max(fresh[col.COMPLETION_TOKENS]) <= 24
    # Rows came back from the replicas mapped to their own prompts: each one's prompt token count is its prompt's.
    tokenizer = AutoTokenizer.from_pretrained(model.path)
    assert fresh[col.PROMPT_TOKENS] == [len(tokenizer(prompt)["input_ids"]) for prompt in fresh[col.PROMPT]]
    assert len(set(fresh[col.PROMPT_TOKENS])) == len(fresh)  # distinct lengths, so a mix-up would show
    assert len(checkpoint.load()) == ROWS  # the new answers were saved as they came
    # The local cluster's daemons ended with the run, and no replica's engine process outlived it.
    assert _ray_daemons() <= daemons
    assert not _orphaned_engine_processes(timeout=10)

    # The canary token in no file the two runs wrote: Ray's session folders (its logs: the runtime-env agent's, the
    # workers'...), outputs, the ZenML store and artifact store, the caches (checkpoints, verdicts, Hugging Face's).
    ray_logs = list(ray_temp.glob("ray/session_*/logs/*"))
    assert len(list(ray_temp.glob("ray/session_2*"))) == 2 and len(ray_logs) > 10, ray_logs  # both runs' sessions
    settings = get_settings()
    places = [ray_temp, settings.OUTPUT_DIR, settings.CHECKPOINT_DIR, settings.JUDGE_CACHE_DIR,
              GlobalConfiguration().config_directory, Client().active_stack.artifact_store.path,
              os.environ["HF_HOME"], os.environ["XDG_CACHE_HOME"], tmp_path]
    assert CANARY not in result.output and not _files_holding(CANARY, places)
    shutil.rmtree(ray_temp)  # kept where the test failed, for a look
