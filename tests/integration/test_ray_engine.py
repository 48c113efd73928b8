"""The `ray` engine for real: Ray Data LLM on a local Ray cluster, two replicas of one CPU each,
the bundled model, against the in-process engine on the same rows.

One short run (engine start dominates: about a minute per replica here). The in-process side
reuses the session's shared engine when the pipeline tests have built it, and frees it after.
"""

import pytest

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import DatasetConfig, EngineConfig, PromptConfig, RayConfig, SamplingConfig
from llm_engineering.evaluation.dataset import read_test_split, with_prompts
from llm_engineering.evaluation.generation import answer_test_split
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.infrastructure.engines import open_engine
from llm_engineering.infrastructure.ray_engine import RayEngine
from llm_engineering.settings import get_settings
from steps.evaluating.engine_pool import ENGINE_POOL

pytestmark = pytest.mark.slow

ROWS = 4


@pytest.mark.timeout(900)
def test_ray_engine_gives_the_in_process_answers_in_the_same_artifact_shape():
    import ray

    split = with_prompts(read_test_split(DatasetConfig(limit=ROWS)), PromptConfig())
    path = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path
    sampling = SamplingConfig(temperature=0.0, max_tokens=32)
    # float32: in bfloat16 (what `dtype: auto` picks on CPUs with fast bf16) the in-process engine's 2 threads
    # and a replica's 1 sum in other orders, and greedy answers part after a few tokens (seen on a Zen 4).
    with open_engine(path, EngineConfig(dtype="float32"), ENGINE_POOL) as in_process_engine:
        in_process, _ = answer_test_split(in_process_engine, split, "smollm2-135m", sampling, PromptConfig(), 2048)

    addresses = set()

    class ObservedRayEngine(RayEngine):
        """The real Ray engine, noting where the cluster listens while rows stream back."""

        def generate_rows(self, rows, sampling):
            for row in super().generate_rows(rows, sampling):
                addresses.update(node["NodeManagerAddress"] for node in ray.nodes())
                addresses.add(ray.get_runtime_context().gcs_address.rsplit(":", 1)[0])
                yield row

    # Two replicas plus an idle in-process engine outgrow a small CI machine; Ray's memory monitor
    # would then kill and restart replicas for ever. No later test needs this engine.
    ENGINE_POOL.release()
    ray_config = RayConfig(replicas=2, cpus_per_replica=1, batch_size=2, max_concurrent_batches=1)
    engine = ObservedRayEngine(path, EngineConfig(backend="ray", dtype="float32", cpu_kvcache_space_gib=1, ray=ray_config))
    on_ray, stats = answer_test_split(engine, split, "smollm2-135m", sampling, PromptConfig(), 2048)

    assert on_ray.features == in_process.features  # same columns, same types: same artifact
    assert on_ray[col.ID] == split[col.ID]  # every input id exactly once, in input order
    assert all(answer.strip() for answer in on_ray[col.ANSWER])
    assert set(on_ray[col.FINISH_REASON]) <= {"stop", "length"}
    assert stats.rows == ROWS and stats.completion_tokens == sum(on_ray[col.COMPLETION_TOKENS]) > 0
    # Greedy decoding on the same weights and engine settings: the same answers, token for token.
    for column in (col.ANSWER, col.FINISH_REASON, col.PROMPT_TOKENS, col.COMPLETION_TOKENS):
        assert on_ray[column] == in_process[column], column
    # The local cluster listened on loopback only, and is gone once generation ends.
    assert addresses == {"127.0.0.1"}
    assert not ray.is_initialized()
