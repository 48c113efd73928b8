"""The images of the cloud configs, built as ZenML would build them, run the project's code.

For each cloud config, ZenML's compiler gives every step its Docker settings and ZenML's image builder gathers each
image's requirement files (tests/support/image_envs.py); a fresh environment with exactly those files (and the parent
image's ZenML) then imports the steps and the pipeline, which is what every remote step does first. A step operator
of the tests' own (tests/support/clean_env_step_operator.py) then runs a step in the generation image's environment,
as a cloud step operator runs it in the image: the code from ZenML's archive, the `settings` secret as environment
variables, the output through the artifact store to the next step on the orchestrator.
"""

import json

import pytest

from tests.support.clean_env_step_operator import register_clean_env_stack
from tests.support.image_envs import ImageEnvs, app_folder, container_environment, extract_code, images, import_check
from tests.support.remote_stacks import CASES, compile_remote_config, ensure_settings_secret

KINDS = ["orchestrator", "generation"]


@pytest.fixture(scope="session")
def image_envs():
    """The environments of the images' requirement sets: each distinct set built once, and kept (image_envs.py)."""
    return ImageEnvs()


@pytest.fixture(scope="session")
def image_code(repo_root, session_dir):
    """What an image gets of the project: ZenML's code archive, extracted (its /app)."""
    return extract_code(repo_root, session_dir / "image-code")


@pytest.fixture(scope="module")
def image_imports(repo_root, session_dir, remote_stacks, image_envs, image_code):
    """{(flavor, kind): (image, exit code, stdout, stderr)}: the import check of every image of every cloud config,
    one per distinct requirement set, all at once."""
    from zenml.orchestrators.utils import get_config_environment_vars

    ensure_settings_secret()
    found = {}
    for flavor in CASES:
        compiled = compile_remote_config(repo_root, flavor)
        for image in images(compiled.snapshot, compiled.stack):
            found[(flavor, "generation" if "generate_answers" in image.steps else "orchestrator")] = image
    keys = {case: image_envs.key(image.requirements) for case, image in found.items()}
    pythons = {keys[case]: image_envs.python_for(image.requirements) for case, image in found.items()}
    # The store a step reaches, as ZenML hands it to a step operator: here the session's store. Each process has its
    # own home and /app (ZenML writes its configuration in both).
    store = get_config_environment_vars()[0]
    running = {key: import_check(python, app_folder(image_code, session_dir / "image-apps" / key),
                                 container_environment(session_dir / "image-homes" / key, **store))
               for key, python in pythons.items()}
    outcomes = {}
    for key, process in running.items():
        stdout, stderr = process.communicate(timeout=600)
        outcomes[key] = (process.returncode, stdout, stderr)
    return {case: (image, *outcomes[keys[case]]) for case, image in found.items()}


def _last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


@pytest.mark.slow
@pytest.mark.timeout(900)  # a machine's first build of the four environments: minutes (then a week without)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("flavor", list(CASES))
def test_every_image_of_the_cloud_configs_imports_the_steps_and_the_pipeline(flavor, kind, image_imports):
    assert {case[1] for case in image_imports if case[0] == flavor} == set(KINDS)  # two images, no more
    image, code, stdout, stderr = image_imports[(flavor, kind)]
    assert code == 0, (f"the {kind} image of {CASES[flavor][0]} (steps {', '.join(image.steps)}; "
                       f"{len(image.requirements)} requirements from {[name for name, _ in image.files]}) cannot "
                       f"import the steps: {_last_line(stderr)}")
    seen = json.loads(_last_line(stdout))
    assert not seen["torch_installed"]  # nothing but vLLM pulls torch into an image, and vLLM has its own


@pytest.fixture(scope="module")
def clean_env(repo_root, session_dir, remote_stacks, image_envs, image_code):
    """(stack name, python): a stack whose step operator runs steps in the environment of the SageMaker config's
    generation image (vLLM aside)."""
    ensure_settings_secret()
    compiled = compile_remote_config(repo_root, "sagemaker")
    generation = next(image for image in images(compiled.snapshot, compiled.stack) if "generate_answers" in image.steps)
    python = image_envs.python_for(generation.requirements)
    return register_clean_env_stack("clean-env", python, image_code, session_dir / "clean-env-home"), python


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_step_on_a_step_operator_runs_in_the_image_environment_with_the_secret_and_hands_its_output_on(
        clean_env, active_stack, settings_secret):
    from zenml.client import Client

    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.config import DatasetConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from tests.support.remote_steps import remote_split_pipeline

    stack, python = clean_env
    active_stack(stack)
    name, value = "DATASET_HUGGINGFACE_WORKSPACE", "clean-env-ws"  # a setting, not a token: fine in metadata
    before = Client().get_secret("settings").secret_values
    Client().update_secret("settings", add_or_update_values={name: value})
    try:
        dataset = DatasetConfig(limit=3)
        run = remote_split_pipeline.with_options(
            secrets=["settings"], steps={"remote_test_split": {"step_operator": "clean-env"}})(dataset=dataset)
    finally:
        Client().update_secret("settings", **({"add_or_update_values": {name: before[name]}} if name in before
                                               else {"remove_values": [name]}))
    run = Client().get_pipeline_run(run.id)
    assert run.status == "completed", run.status
    remote = run.steps["remote_test_split"]
    assert remote.config.step_operator == "clean-env"
    metadata = remote.run_metadata
    assert metadata["python_prefix"] == str(python.parent.parent)  # the image's environment ran it
    assert metadata["workspace"] == value  # the secret's value, an environment variable of the remote step only
    assert metadata["rows"] == 3  # load_test_split's own metadata
    expected = list(read_test_split(dataset)[col.ID])
    assert run.steps["row_ids"].outputs["row_ids"][0].load() == expected  # read back on the orchestrator
