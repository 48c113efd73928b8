from typing import Annotated, Optional

from datasets import Dataset
from zenml import log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import DatasetConfig, PromptConfig
from llm_engineering.evaluation.generation.dataset import read_test_split, with_prompts
from llm_engineering.settings import get_settings
from steps.materializers import DatasetMaterializer


# Never cached: a local file may change under the same path. Re-running costs a second, and
# the content hash of its output keeps generation cached when the rows did not change.
@step(enable_cache=False, output_materializers=DatasetMaterializer)
def load_test_split(dataset: DatasetConfig, prompt: PromptConfig,
                    reference_required_by: Optional[str] = None) -> Annotated[Dataset, col.TEST_SPLIT]:
    """Load, validate and subset the test split, and format its prompts (`reference_required_by`: a rubric that
    needs every row's reference)."""
    split = with_prompts(read_test_split(dataset, reference_required_by, get_settings().hub_token), prompt)
    references = sum(ref is not None for ref in split[col.REFERENCE])
    log_metadata(
        metadata={"source": dataset.source, "split": dataset.split, "rows": len(split),
                  "rows_with_reference": references, "prompt_template": prompt.template},
    )
    return split
