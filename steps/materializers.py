"""ZenML materializers: `datasets.Dataset` (no pickling, works with remote artifact stores)
and the evaluation summary (JSON plus its HTML report as the dashboard visualization).

ZenML's own huggingface integration needs datasets<4; this one is small and stable.
Their import paths are stored with every artifact: do not move them.
"""

from __future__ import annotations

import functools
import hashlib
import html
import os
import tempfile
from typing import Any, ClassVar, Optional

from datasets import Dataset, load_from_disk
from zenml.enums import ArtifactType, VisualizationType
from zenml.io import fileio
from zenml.materializers.base_materializer import BaseMaterializer
from zenml.materializers.pydantic_materializer import PydanticMaterializer
from zenml.utils import source_utils

from llm_engineering.evaluation.disk import naming_a_full_disk
from llm_engineering.evaluation.report.html import render_html
from llm_engineering.evaluation.stored.summary import EvaluationSummary

# ZenML names the package of each stored artifact's type and materializer with
# `importlib.metadata.packages_distributions()`, which reads every installed package's metadata (0.2 s in this
# environment's ~270 packages) and is not cached: two or three times per pipeline run. Packages do not change while a
# process runs, so each module's answer is kept for the process.
if hasattr(source_utils, "_get_package_for_module"):
    source_utils._get_package_for_module = functools.cache(source_utils._get_package_for_module)

_PREVIEW_ROWS = 20
_PREVIEW_CHARS = 300


def _copy_tree(source: str, target: str) -> None:
    fileio.makedirs(target)
    for name in os.listdir(source):
        fileio.copy(os.path.join(source, name), os.path.join(target, name), overwrite=True)


class DatasetMaterializer(BaseMaterializer):
    ASSOCIATED_TYPES: ClassVar[tuple[type[Any], ...]] = (Dataset,)
    ASSOCIATED_ARTIFACT_TYPE: ClassVar[ArtifactType] = ArtifactType.DATA

    def load(self, data_type: type[Any]) -> Dataset:
        with tempfile.TemporaryDirectory() as local:
            for name in fileio.listdir(self.uri):
                name = str(name)
                if name.endswith(".html"):
                    continue
                fileio.copy(os.path.join(self.uri, name), os.path.join(local, name))
            # Keep the data in memory: the temporary folder is gone after this.
            return load_from_disk(local, keep_in_memory=True)

    def save(self, data: Dataset) -> None:
        with tempfile.TemporaryDirectory() as local:
            data.save_to_disk(local)
            with naming_a_full_disk(f"the artifact store ({self.uri})", "store this step's output",
                                    "(or give the stack an artifact store elsewhere) and run the same command "
                                    "again; finished steps are cached and every generated answer is saved in the "
                                    "checkpoint, so nothing is generated again."):
                _copy_tree(local, self.uri)

    def extract_metadata(self, data: Dataset) -> dict[str, Any]:
        return {"num_rows": len(data), "columns": list(data.column_names)}

    def compute_content_hash(self, data: Dataset) -> Optional[str]:
        # Lets downstream steps stay cached when an upstream step re-runs with the same output.
        digest = hashlib.sha256(str(data.features).encode())
        for batch in data.data.to_batches():
            digest.update(batch.serialize())
        return digest.hexdigest()

    def save_visualizations(self, data: Dataset) -> dict[str, VisualizationType]:
        rows = data.select(range(min(_PREVIEW_ROWS, len(data)))).to_list()

        def cell(value: Any) -> str:
            text = str(value)
            text = text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "…"
            return f"<td>{html.escape(text)}</td>"

        header = "".join(f"<th>{html.escape(name)}</th>" for name in data.column_names)
        body = "".join("<tr>" + "".join(cell(row[c]) for c in data.column_names) + "</tr>" for row in rows)
        page = (
            f"<p>{len(data)} rows; first {len(rows)} shown.</p>"
            f"<table border='1'><tr>{header}</tr>{body}</table>"
        )
        path = os.path.join(self.uri, "preview.html")
        with fileio.open(path, "w") as handle:
            handle.write(page)
        return {path: VisualizationType.HTML}


class EvaluationSummaryMaterializer(PydanticMaterializer):
    ASSOCIATED_TYPES: ClassVar[tuple[type[Any], ...]] = (EvaluationSummary,)

    def save_visualizations(self, data: EvaluationSummary) -> dict[str, VisualizationType]:
        path = os.path.join(self.uri, "report.html")
        with fileio.open(path, "w") as handle:
            handle.write(render_html(data))
        return {path: VisualizationType.HTML}
