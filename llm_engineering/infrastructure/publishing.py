"""Publish results as a dataset repository: `<workspace>/<model>-results`.

Always to a local folder laid out like a Hub dataset repo (parquet data files plus a README
dataset card, loadable with `datasets.load_dataset(folder)`); to the Hub as well when asked.
The original pushes answers after generation and again, with verdicts, after scoring.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from datasets import Dataset
from filelock import FileLock
from huggingface_hub import DatasetCard, DatasetCardData

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.disk import naming_a_full_disk
from llm_engineering.evaluation.stored.judge_id import model_names
from llm_engineering.evaluation.report.ppi_text import corrected_text
from llm_engineering.evaluation.report.trust_text import (
    SIMILARITY_METRIC,
    pairwise_finding,
    pairwise_name,
    similarity_check_finding,
)

if TYPE_CHECKING:  # read only: publishing needs no judge code loaded
    from llm_engineering.evaluation.trust.labels import Labels
    from llm_engineering.evaluation.stored.trust import TrustChecks
    from llm_engineering.evaluation.stored.pairwise import PairwiseReport

logger = logging.getLogger(__name__)


def repo_name(workspace: str, model_name: str) -> str:
    """`<workspace>/<model>-results`, with characters the Hub rejects replaced."""
    safe = re.sub(r"[^\w.-]+", "-", model_name).strip("-.")
    return f"{workspace}/{safe}-results"


def data_file(split: str, unique: bool) -> str:
    # Locally a fresh name per publish: `datasets` caches a local repo by its card's config and
    # would serve the previous rows after a re-publish. On the Hub each commit is a new revision.
    stamp = f"-{uuid.uuid4().hex[:8]}" if unique else ""
    return f"data/{split}{stamp}-00000-of-00001.parquet"


def dataset_card(repo: str, split: str, data_path: str, info: dict[str, Any]) -> DatasetCard:
    """A dataset card saying what produced the results (model, data, sampling, judge, scores, run)."""
    data = DatasetCardData(
        pretty_name=repo,
        tags=["llm-evaluation", "generated-answers"],
        configs=[{"config_name": "default", "data_files": [{"split": split, "path": data_path}]}],
    )
    details = "\n".join(f"- **{key}**: {value}" for key, value in info.items() if value is not None)
    return DatasetCard(
        f"---\n{data.to_yaml()}\n---\n\n# {repo}\n\n"
        f"Results of the LLM evaluation pipeline.\n\n{details}\n"
    )


def card_info(results: Dataset, extra: dict[str, Any], *, labels: Optional[Labels] = None) -> dict[str, Any]:
    """Card facts: the caller's, plus the judge and the mean scores when the rows are judged; with human `labels` of
    some of the rows, the means corrected by them (PPI++)."""
    info = dict(extra)
    info["rows"] = len(results)
    if col.JUDGE_MODEL in results.column_names and len(results):
        from llm_engineering.evaluation.report.summary import model_scores

        scores = model_scores(results)
        info["judge"] = results[0][col.JUDGE_MODEL]
        info["scores"] = ", ".join(
            f"{c.name} {c.mean} (95% CI {c.ci})" + (f", expected {c.expected_mean} (95% CI {c.expected_ci})"
                                                  if c.expected_mean is not None else "")
            for c in scores.criteria
        ) + f"; {scores.scored} scored, {scores.failed} failed"
        if labels is not None:
            from llm_engineering.evaluation.trust.ppi import ppi_by_criterion

            corrected = ppi_by_criterion(results.to_list(), labels, [c.name for c in scores.criteria])
            info["scores corrected by human labels (PPI++)"] = ", ".join(
                f"{name} {corrected_text(p)} ({p.labelled} labelled rows, {p.unlabelled} other judged rows)"
                for name, p in corrected.items()) or None
        from llm_engineering.evaluation.report.summary import self_preference_warnings

        info["warning"] = " ".join(self_preference_warnings(model_names(info["judge"]), [scores.model_id], None)) or None
        measured = [m for m in scores.metrics if m.name != "similarity" and m.rows]
        if measured:
            info["metrics without a judge"] = "; ".join(f"{m.name} {m.mean} (95% CI {m.ci}; {m.rows} of {m.answers} rows)"
                                                        for m in measured)
        if scores.checks is not None:
            info["checks"] = (f"answers passing every check {scores.checks.passed.describe()}; checks passed "
                              f"{scores.checks.items.describe()}")
        if scores.similarity_mean is not None:
            info["reference similarity"] = (f"{scores.similarity_mean} (95% CI {scores.similarity_ci}; "
                                            f"{SIMILARITY_METRIC}, {scores.similarity_rows} rows)")
    return info


def trust_info(model_id: str, checks: Optional[TrustChecks] = None,
               pairwise: Optional[PairwiseReport] = None) -> dict[str, Any]:
    """Card facts on how far the scores can be trusted: judge check, similarity metric
    check, and the pairwise comparisons this model took part in."""
    info: dict[str, Any] = {}
    if checks is not None and checks.judge is not None:
        info["judge check"] = checks.judge.verdict
        for tier in checks.judge.tiers:
            info[f"judge check, {tier.tier}"] = tier.verdict
    if checks is not None and checks.similarity is not None:
        info["similarity metric check"] = similarity_check_finding(checks.similarity)
    for c in pairwise.comparisons if pairwise is not None else []:
        if model_id in (c.model_a, c.model_b):
            info[f"pairwise {pairwise_name(c)}"] = pairwise_finding(c)
            if c.ppi is not None:
                info[f"pairwise {pairwise_name(c)}, win rate corrected by human labels (PPI++)"] = (
                    f"{corrected_text(c.ppi)} ({c.ppi.labelled} labelled pairs, {c.ppi.unlabelled} other judged pairs)")
    return info


def publish_local(
    results: Dataset, hub_dir: Path, repo: str, *, split: str, info: dict[str, Any]
) -> Path:
    """Write `results` and its card to `<hub_dir>/<repo>`, replacing the folder atomically."""
    target = Path(hub_dir) / repo
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    full_disk = naming_a_full_disk(str(target.parent), f"publish {repo}",
                                   "(or set OUTPUT_DIR to another disk) and run `python tools/run.py publish`; the "
                                   "results are stored as ZenML artifacts, and the repo as it was is kept.")
    try:
        with full_disk:
            (staging / "data").mkdir()
            path = data_file(split, unique=True)
            results.to_parquet(str(staging / path))
            dataset_card(repo, split, path, info).save(staging / "README.md")
            # Two runs publishing to one repo at once: one swap at a time, so neither removes the other's new folder.
            with FileLock(target.parent / f".{target.name}.lock"):
                if target.exists():
                    shutil.rmtree(target)
                staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logger.info("Published %d rows to %s", len(results), target)
    return target
