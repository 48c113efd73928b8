import pytest

from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.generation.prompts import chat_messages, format_prompts
from llm_engineering.run_config import EvaluationConfig, load_run_config
from llm_engineering.run_overrides import Overrides, apply_overrides


class TemplateTokenizer:
    """Renders messages like a chat template would; only the call contract matters here."""

    chat_template = "{% for m in messages %}...{% endfor %}"

    def apply_chat_template(self, conversation, tokenize, add_generation_prompt):
        assert tokenize is False and add_generation_prompt is True
        return "".join(f"<{m['role']}>{m['content']}" for m in conversation) + "<assistant>"


def test_chat_prompts_use_the_tokenizer_template_with_optional_system_turn():
    prompts = format_prompts(["Hi"], "chat", TemplateTokenizer(), system_prompt="Be brief.")
    assert prompts == ["<system>Be brief.<user>Hi<assistant>"]
    assert chat_messages("Hi") == [{"role": "user", "content": "Hi"}]


def test_the_bundled_models_own_chat_template_adds_its_default_system_turn():
    """The real SmolLM2 tokenizer (not a stand-in): its template puts in a system turn of its own when none is given."""
    from transformers import AutoTokenizer

    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.settings import get_settings

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path)
    (plain,) = format_prompts(["What is RAG?"], "chat", tokenizer)
    assert plain.startswith("<|im_start|>system\n") and "<|im_start|>user\nWhat is RAG?<|im_end|>" in plain
    assert plain.endswith("<|im_start|>assistant\n")  # the generation prompt: the model answers next
    (briefed,) = format_prompts(["What is RAG?"], "chat", tokenizer, system_prompt="Answer in one sentence.")
    assert briefed.startswith("<|im_start|>system\nAnswer in one sentence.<|im_end|>")
    assert plain.split("<|im_end|>")[0] != briefed.split("<|im_end|>")[0]  # the default turn is replaced, not kept


def test_chat_prompts_need_a_tokenizer_with_a_template():
    with pytest.raises(ValueError, match="tokenizer"):
        format_prompts(["Hi"], "chat")
    tokenizer = TemplateTokenizer()
    tokenizer.chat_template = None
    with pytest.raises(ValueError, match="no chat template"):
        format_prompts(["Hi"], "chat", tokenizer)


def test_shipped_config_is_valid_and_equals_the_defaults(repo_root):
    config = load_run_config(repo_root / "configs" / "evaluating.yaml")
    assert config.evaluation == EvaluationConfig()
    assert config.zenml_options == {"enable_cache": True}
    # The defaults the README promises for generation: the handbook's sampling.
    sampling = config.evaluation.sampling
    assert (sampling.temperature, sampling.top_p, sampling.min_p) == (0.8, 0.95, 0.05)
    assert (sampling.max_tokens, sampling.seed) == (256, 42)


def test_the_readmes_example_configs_load_as_they_say(repo_root):
    jury = load_run_config(repo_root / "configs" / "jury.yaml").evaluation
    assert [(j.backend, j.model, j.temperature) for j in jury.judges] == [("vllm", "smollm2-135m", 0.0),
                                                                          ("vllm", "smollm2-135m", 1.0)]
    assert jury.jury.aggregate == "mean"
    qwen = load_run_config(repo_root / "configs" / "judge-qwen.yaml").evaluation
    assert (qwen.judge.model, qwen.judge.resolved_rubric().name) == ("qwen2.5-coder-1.5b", "task-accuracy")
    served = load_run_config(repo_root / "configs" / "judge-served.yaml").evaluation.judge
    assert (served.backend, served.model, served.endpoint.base_url) == ("openai", "judge", "http://127.0.0.1:8000/v1")
    openai = load_run_config(repo_root / "configs" / "judge-openai.yaml").evaluation.judge
    assert (openai.backend, openai.model, openai.endpoint.base_url) == ("openai", "gpt-4o-mini", None)
    checklist = load_run_config(repo_root / "configs" / "checklist.yaml").evaluation
    assert checklist.judge.resolved_rubric().checklist is not None
    assert checklist.judge.model == "auto" and checklist.checklists.from_reference  # the rest: evaluating.yaml's
    rubric_file = repo_root / "configs" / "rubrics" / "concise-technical.yaml"
    rubric = EvaluationConfig.model_validate({"judge": {"rubric": str(rubric_file)}}).judge.resolved_rubric()
    assert rubric.name == "concise-technical" and rubric.names == ["correctness", "concision"] and rubric.reference_guided


@pytest.mark.parametrize(
    "text, message",
    [
        ("parameters:\n  sampling:\n    temprature: 0.5\n", "parameters.sampling.temprature: unknown key"),
        ("parameters:\n  sampling:\n    top_p: 1.5\n", "parameters.sampling.top_p"),
        ("parameters:\n  sampling:\n    max_tokens: 0\n", "parameters.sampling.max_tokens"),
        ("parameters:\n  models: []\n", "parameters.models"),
        ("parameters:\n  models: [a, a]\n", "listed twice"),
        ("paramters:\n  models: [a]\n", "Unknown top-level key(s) ['paramters']"),
        ("parameters: [unclosed\n", "not valid YAML"),
        ("- a\n- b\n", "must hold a mapping"),
        ("parameters:\n  judge:\n    request_options: {temperature: 0.7, top_p: 0.9}\n",
         "request_options may not set temperature: the judge sets them on every request (use judge.temperature instead)"),
        ("parameters:\n  judge:\n    request_options: {seed: 1, messages: []}\n", "may not set messages, seed"),
        ("parameters:\n  judge:\n    base_url: http://127.0.0.1:8000/v1\n",
         "judge.endpoint is for backends openai and openai-batch; backend 'vllm' runs the judge in process: remove "
         "endpoint settings (base_url) or set backend: openai"),
        ("parameters:\n  judge: {backend: openai, model: m, batch: {max_wait_s: 60}}\n",
         "judge.batch is for backend openai-batch; remove batch settings (max_wait_s)"),
        ("parameters:\n  judge: {backend: openai, model: m, timeout_s: 5, endpoint: {timeout_s: 9}}\n",
         "timeout_s given twice, flat and under endpoint: keep the endpoint: one"),
    ],
)
def test_bad_config_files_name_the_key_and_the_fix(tmp_path, text, message):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_run_config(path)
    assert message in str(error.value)


def test_a_judge_config_groups_endpoint_and_batch_settings_and_still_reads_the_flat_keys():
    flat = {"backend": "openai-batch", "model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1", "max_attempts": 2,
            "request_options": {"top_p": 0.5}, "batch_poll_max_s": 7, "batch_max_wait_s": 60}
    grouped = {"backend": "openai-batch", "model": "gpt-4o-mini",
               "endpoint": {"base_url": "http://127.0.0.1:9/v1", "max_attempts": 2, "request_options": {"top_p": 0.5}},
               "batch": {"poll_max_s": 7, "max_wait_s": 60}}
    judge = JudgeConfig.model_validate(flat)
    assert judge == JudgeConfig.model_validate(grouped)
    assert (judge.endpoint.base_url, judge.endpoint.max_attempts, judge.batch.poll_max_s, judge.batch.max_wait_s) == \
        ("http://127.0.0.1:9/v1", 2, 7, 60)
    assert judge.batch.poll_initial_s == JudgeConfig().batch.poll_initial_s  # what is not given keeps its default
    # A stored run's config (every key written out) reads back as it was.
    assert EvaluationConfig.model_validate(EvaluationConfig(judge=judge).model_dump()).judge == judge


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_run_config(tmp_path / "nope.yaml")


def test_command_line_overrides_are_validated():
    config = apply_overrides(EvaluationConfig(), Overrides(models=["a", "b"], dataset="x.jsonl", limit=3, dummy=True))
    assert config.models == ["a", "b"]
    assert (config.dataset.source, config.dataset.limit, config.dataset.row_limit) == ("x.jsonl", 3, 3)
    with pytest.raises(ConfigError, match="listed twice"):
        apply_overrides(EvaluationConfig(), Overrides(models=["a", "a"]))


def test_split_and_columns_from_the_command_line_reach_the_dataset_and_a_bad_column_names_the_roles():
    config = apply_overrides(EvaluationConfig(), Overrides(split="validation", columns=["instruction=q", "id=qid"]))
    assert config.dataset.split == "validation"
    assert (config.dataset.columns.instruction, config.dataset.columns.id, config.dataset.columns.reference) == ("q", "qid", None)
    with pytest.raises(ConfigError, match="write ROLE=NAME with ROLE one of instruction, reference, id"):
        apply_overrides(EvaluationConfig(), Overrides(columns=["question=q"]))


@pytest.mark.parametrize("spec, served, expected", [
    ("qwen2.5-coder-1.5b", None, ("vllm", "qwen2.5-coder-1.5b", None)),
    ("./my-judge", None, ("vllm", "./my-judge", None)),
    ("org/judge-7b", None, ("vllm", "org/judge-7b", None)),
    ("openai:gpt-4o-mini", None, ("openai", "gpt-4o-mini", None)),
    ("openai-batch:gpt-4o-mini", None, ("openai-batch", "gpt-4o-mini", None)),
    ("http://127.0.0.1:8000/v1/", "served-judge", ("openai", "served-judge", "http://127.0.0.1:8000/v1")),
])
def test_judge_named_on_the_command_line_sets_its_backend_model_and_endpoint(spec, served, expected):
    judge = apply_overrides(EvaluationConfig(), Overrides(judge_model=spec, judge_served_model=served)).judge
    assert (judge.backend, judge.model, judge.endpoint.base_url) == expected


def test_a_judge_named_in_process_replaces_a_served_one_and_a_bare_name_keeps_the_served_endpoint():
    served = apply_overrides(EvaluationConfig(), Overrides(judge_model="http://127.0.0.1:9/v1", judge_served_model="m"))
    back = apply_overrides(served, Overrides(judge_model="vllm:smollm2-135m")).judge
    assert (back.backend, back.model, back.endpoint.base_url) == ("vllm", "smollm2-135m", None)
    renamed = apply_overrides(served, Overrides(judge_model="other")).judge  # that server's other model
    assert (renamed.backend, renamed.model, renamed.endpoint.base_url) == ("openai", "other", "http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="--judge-model names the model of a served judge"):
        apply_overrides(EvaluationConfig(), Overrides(judge_served_model="m"))
    with pytest.raises(ConfigError, match="give its URL with --judge"):
        apply_overrides(EvaluationConfig(), Overrides(judge_model="smollm2-135m", judge_served_model="m"))


def test_a_key_variable_the_config_names_follows_only_to_its_own_endpoint():
    """`endpoint.api_key_env` was named for the config's endpoint: --judge keeps it there, and drops it for another
    URL or OpenAI's API (where the key it names would otherwise go)."""
    config = EvaluationConfig(judge={"backend": "openai", "model": "m", "endpoint": {
        "base_url": "http://127.0.0.1:8000/v1", "api_key_env": "MY_SERVER_KEY"}})
    same = apply_overrides(config, Overrides(judge_model="http://127.0.0.1:8000/v1/", judge_served_model="m")).judge
    other = apply_overrides(config, Overrides(judge_model="http://127.0.0.1:9000/v1", judge_served_model="m")).judge
    openai = apply_overrides(config, Overrides(judge_model="openai:gpt-4o-mini")).judge
    assert [j.endpoint.api_key_env for j in (same, other, openai)] == ["MY_SERVER_KEY", None, None]


def test_a_served_judge_without_its_model_name_that_cannot_be_reached_says_so_before_any_work():
    with pytest.raises(ConfigError, match=r"--judge http://127.0.0.1:9/v1: cannot list the served models .*--judge-model"):
        apply_overrides(EvaluationConfig(), Overrides(judge_model="http://127.0.0.1:9/v1"))


def test_no_cache_ignores_the_verdict_cache_of_every_judge_and_generates_again(repo_root):
    jury = apply_overrides(load_run_config(repo_root / "configs" / "jury.yaml").evaluation, Overrides(fresh=True))
    assert [judge.refresh for judge in jury.judges] == [True, True] and jury.resume is False
    assert apply_overrides(EvaluationConfig(), Overrides()).judge.refresh is False


def test_rubric_from_the_command_line_reaches_every_judge_of_a_jury_and_a_lone_judge(repo_root):
    jury = apply_overrides(load_run_config(repo_root / "configs" / "jury.yaml").evaluation, Overrides(rubric="helpfulness"))
    assert len(jury.judges) == 2 and {judge.rubric for judge in jury.judges} == {"helpfulness"}
    assert apply_overrides(EvaluationConfig(), Overrides(rubric="helpfulness")).judge.rubric == "helpfulness"


def test_zenml_options_go_to_with_options_and_no_cache_turns_caching_off(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("enable_cache: true\nrun_name: r\nsecrets: [settings]\nsettings: {docker: {requirements: [a]}}\n")
    config = load_run_config(path)
    expected = {"enable_cache": True, "run_name": "r", "secrets": ["settings"], "settings": {"docker": {"requirements": ["a"]}}}
    assert config.pipeline_options() == expected
    assert config.pipeline_options(no_cache=True) == {**expected, "enable_cache": False}


def test_every_zenml_key_of_a_run_config_is_a_pipeline_option():
    import inspect

    from zenml.pipelines.pipeline_definition import Pipeline

    from llm_engineering.run_config import ZENML_KEYS

    accepted = set(inspect.signature(Pipeline.with_options).parameters) | set(inspect.signature(Pipeline.configure).parameters)
    assert ZENML_KEYS <= accepted


def test_auto_prompts_a_model_with_its_chat_template_and_one_without_in_alpaca():
    (chat,) = format_prompts(["Hi"], "auto", TemplateTokenizer())
    assert chat == "<user>Hi<assistant>"
    plain = TemplateTokenizer()
    plain.chat_template = None
    (alpaca,) = format_prompts(["Hi"], "auto", plain)
    assert alpaca.startswith("Below is an instruction") and alpaca.endswith("### Response:\n")
    (forced,) = format_prompts(["Hi"], "alpaca", TemplateTokenizer())  # alpaca stays one word away
    assert forced == alpaca


def test_answers_stop_where_a_new_alpaca_turn_begins_unless_told_otherwise():
    from llm_engineering.evaluation.config import SamplingConfig
    from llm_engineering.evaluation.generation.prompts import alpaca_prompt
    from llm_engineering.infrastructure.vllm_engine import sampling_params

    # A model that runs on past its answer writes the template's next turn: each of its headers is a stop string.
    next_turn = alpaca_prompt("another question")
    assert {m for m in SamplingConfig().stop if m in next_turn} == {"### Instruction:", "### Response:"}
    assert sampling_params(SamplingConfig()).stop == list(SamplingConfig().stop)
    assert not sampling_params(SamplingConfig(stop=[])).stop  # [] turns it off


@pytest.mark.parametrize("seed", [42, None])
def test_a_prompts_samples_are_drawn_as_vllms_own_n_draws_its_child_requests(seed):
    from types import SimpleNamespace

    from vllm.v1.engine.parallel_sampling import ParentRequest

    from llm_engineering.evaluation.config import SamplingConfig
    from llm_engineering.infrastructure.vllm_engine import sampling_params

    config = SamplingConfig(seed=seed, n=4)
    parent = sampling_params(config)
    parent.n = 4
    request = ParentRequest(SimpleNamespace(request_id="r", external_req_id="r", params=parent))
    for sample in range(4):
        child = request.get_child_info(sample)[1]
        ours = sampling_params(config, sample)
        assert (child.seed, child.temperature, child.top_p, child.stop, child.n) == (
            ours.seed, ours.temperature, ours.top_p, ours.stop, ours.n)


def test_an_answer_without_prompt_token_ids_counts_no_prompt_tokens():
    from types import SimpleNamespace

    from llm_engineering.infrastructure.vllm_engine import answer_record

    # vLLM gives no prompt token ids for a prompt given as embeddings.
    output = SimpleNamespace(prompt_token_ids=None,
                             outputs=[SimpleNamespace(text=" An answer. ", finish_reason="stop", token_ids=[7, 8, 9])])
    record = answer_record(output)
    assert (record.answer, record.prompt_tokens, record.completion_tokens) == ("An answer.", 0, 3)
