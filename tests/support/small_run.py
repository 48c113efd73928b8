"""The small pipeline run the integration tests share: 3 rows, short answers, the embedded model judging itself."""

import json

from llm_engineering.run_config import EvaluationConfig

ROWS = 3
SMALL = {
    "dataset": {"limit": ROWS},
    "sampling": {"max_tokens": 48},
    "judge": {"model": "smollm2-135m", "max_tokens": 256, "max_analysis_chars": 160},
}


# The judge check and reference similarity cost a run seconds (the check's verdicts, the embedder): off where no
# assertion reads them. `first_run` keeps both, and its test reads them.
# On the command line, for a test of a message that comes after the checks of this machine's free memory: the small
# judge, so that the default judge's weights (6.6 GiB in float32 on an AVX2-only CPU) beside the other test worker's
# engines do not stop the run first.
SMALL_JUDGE = ("--judge", "smollm2-135m")
UNREAD_CHECKS_OFF = {"judge_check": {"rows": 0}, "similarity": {"enabled": False}}


def small_config(*, checks=False, **judge):
    data = json.loads(json.dumps(SMALL))
    data["judge"].update(judge)
    return EvaluationConfig.model_validate(data if checks else {**data, **UNREAD_CHECKS_OFF})


def step_status(run, step):
    return str(run.steps[step].status.value).lower()


# What first_run published in the local results repo, read right after it ran: later runs of the same
# model (other tests, any order) publish to the same folder.
FIRST_RUN_PUBLISHED = {}
