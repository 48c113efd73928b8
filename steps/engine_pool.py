"""The process's one vLLM engine pool, owned by the wiring layer and handed to the library.

ZenML runs the steps of a local run one after another in one process. The judge steps can reuse
the generation step's in-process engine (same model, same engine config: no second engine start)
only through an object that outlives a step: this process-level pool (a generation step whose run next needs other
weights stops its engine as it ends: `generate_answers.FREE_ENGINE`). It lives here, at the edge,
so the library keeps no global engine and every library function is given the pool it uses.
Each step process on a remote step operator gets its own pool.
"""

import atexit
import multiprocessing.util  # noqa: F401  (registers multiprocessing's exit hook before ours; see below)

from llm_engineering.infrastructure.vllm_engine import EnginePool

ENGINE_POOL = EnginePool()

# The engine runs in its own process: free it when this process ends. atexit runs hooks last-in
# first-out, so this one (registered after multiprocessing's) runs first; multiprocessing's hook
# would otherwise wait forever for the engine process.
atexit.register(ENGINE_POOL.release)
