"""Column and artifact names: the contract between steps, defined once."""

# Artifact names shown in the ZenML dashboard (see docs/architecture.md).
TEST_SPLIT = "test_split"
GENERATIONS = "generations"
EVALUATIONS = "evaluations"
EVALUATION_SUMMARY = "evaluation_summary"

# test_split
ID = "id"
INSTRUCTION = "instruction"
REFERENCE = "reference"
PROMPT = "prompt"
# conversations (a split with multi-turn rows only: `generation.conversation_rows`): a row per turn
CONVERSATION_ID = "conversation_id"
TURN = "turn"  # 1-based; absent: 1 (a one-turn split)
# the conversation before the row's user message, [{role, content}]; in the test split an assistant message whose
# content is None stands for the model's own answer to that earlier turn, filled in at generation
HISTORY = "history"
# a source row's conversation: a list of user messages (MT-Bench's question.jsonl), or a chat in role/content form
TURNS = "turns"
MESSAGES = "messages"

# generations
# which of a prompt's answers (0..n-1 with sampling.n = n); a row's answers share its id. Absent: 0 (stored before)
SAMPLE = "sample"
MODEL_ID = "model_id"
ANSWER = "answer"
FINISH_REASON = "finish_reason"
PROMPT_TOKENS = "prompt_tokens"
COMPLETION_TOKENS = "completion_tokens"
# finish_reason of a row whose prompt leaves no room for an answer in max_model_len (not generated)
PROMPT_TOO_LONG = "prompt_too_long"

# evaluations: per criterion of the rubric, `<criterion>_score` etc. (the handbook's: accuracy_score, style_score...)
JUDGE_MODEL = "judge_model"
JUDGE_ERROR = "judge_error"
JUDGE_RAW = "judge_raw"
JUDGE_PROMPT_TOKENS = "judge_prompt_tokens"
JUDGE_COMPLETION_TOKENS = "judge_completion_tokens"
JUDGE_CACHED = "judge_cached"
# the verdict's share of the judge's wall time (JudgeReply.seconds), summed over a jury's judges; 0 when cached
JUDGE_SECONDS = "judge_seconds"
JUDGE_CALLS = "judge_calls"  # the judge calls made for the row (not from the cache): its verdict, and its probe if any
REFERENCE_SIMILARITY = "reference_similarity"
EXPECTED_PROBLEM = "expected_score_problem"  # why a verdict has no expected scores (no logprobs, ...)
# escalation (`judge.escalate_to`): the first judge's probability of the integer score it gave (lowest over the
# criteria), read from the score distribution the row's expected score comes from (`judging.escalation`: the probe
# before the analysis where the rubric has one, else the verdict's score token); whether the row's verdict is the second
# judge's, and why not where the second judge failed
CONFIDENCE = "judge_confidence"
ESCALATED = "escalated"
ESCALATION_ERROR = "escalation_error"


def score(criterion: str) -> str:
    return f"{criterion}_score"


def analysis(criterion: str) -> str:
    return f"{criterion}_analysis"


def expected(criterion: str) -> str:
    """The probability-weighted score: sum of value x the judge's probability of it."""
    return f"{criterion}_expected"


def probabilities(criterion: str) -> str:
    """The judge's probability of each scale value, min..max."""
    return f"{criterion}_probs"


def jury_scores(criterion: str) -> str:
    """With a jury: each judge's integer score, in the order of `judges`."""
    return f"{criterion}_jury_scores"


def jury_expected(criterion: str) -> str:
    return f"{criterion}_jury_expected"


def checklist_items(criterion: str) -> str:
    """Under a checklist rubric: the row's items and the judge's probability that the answer states each."""
    return f"{criterion}_items"


def score_error(criterion: str) -> str:
    """Under a checklist rubric: why the row has no score on `criterion`, one of the criteria besides the checklist's,
    while its checklist verdict stands (None where it has one)."""
    return f"{criterion}_score_error"


# judge-free scores (`evaluation.metrics`): a row's category and its checks (JSON text of `{type, value, ...}`), from
# the test split on; in the evaluations, each metric's value (`metric`), the share of the row's checks passed (None
# without checks), whether every one passed, and each check's verdict ({type, value as JSON, passed, reason})
CATEGORY = "category"
CHECKS = "checks"
CHECK_SHARE = "checks_share"
CHECKS_PASSED = "checks_passed"
CHECK_RESULTS = "check_results"


def metric(name: str) -> str:
    """A judge-free metric's column (`metric_token_f1`); the embedding similarity keeps the column earlier runs stored."""
    return REFERENCE_SIMILARITY if name == "similarity" else f"metric_{name}"


# a row's checklist items (list of strings): the dataset's own `checklist` column, or the `checklists` artifact's
CHECKLIST = "checklist"
CHECKLISTS = "checklists"
# where a row's checklist items came from (`judging.checklist_writing`: the dataset, the reference's points, or a
# writer's, from the reference or from the instruction alone)
CHECKLIST_SOURCE = "checklist_source"

# The usual names of a test row's columns, the first present taken; every reader of a split reads these tuples. The
# reference may be called any of these ways (the original uses `output`); `reference` first, as it can mean nothing
# else (a published results file has the model's `answer` beside it).
REFERENCE_ALIASES = ("reference", "answer", "output")
INSTRUCTION_ALIASES = ("instruction", "question", "prompt")
# `--column reference=none` (`dataset.columns.reference: none`): the split has no column in that role, whatever its
# columns are called (an `answer` column that is not a reference); for the optional roles.
NO_COLUMN = "none"

# Secondary artifacts
GENERATION_STATS = "generation_stats"
PUBLISH_RECEIPT = "publish_receipt"
TRUST_CHECKS = "trust_checks"
PAIRWISE_COMPARISONS = "pairwise_comparisons"
LABEL_AGREEMENT = "label_agreement"
