"""Artifacts stored before evaluation/ was split into rooms still load.

ZenML stores each artifact with its type's import path, and loads the type from that path: a `publish_receipt`,
`evaluation_summary` or `trust_checks` stored by an earlier version names a module that has since moved. Those
modules' old names are aliases of their new homes here (a rescore, a `--compare-to`, a `publish` or a cached
step reads old runs as before); `evaluation.generation`, now a package, answers for `GenerationStats` itself.
Nothing else uses the old names.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType
from typing import Any, Optional, Sequence

MOVED = {  # old module, whose name stored artifacts carry -> where it lives now
    "llm_engineering.evaluation.publishing": "llm_engineering.infrastructure.publishing",
    "llm_engineering.evaluation.summary": "llm_engineering.evaluation.report.summary",
    "llm_engineering.evaluation.judge_check": "llm_engineering.evaluation.trust.judge_check",
    "llm_engineering.evaluation.pairwise": "llm_engineering.evaluation.judging.pairwise",
    "llm_engineering.evaluation.label_agreement": "llm_engineering.evaluation.trust.label_agreement",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: Any) -> ModuleType:
        return importlib.import_module(self.target)  # the module itself, under its old name too

    def exec_module(self, module: ModuleType) -> None:
        pass


class _MovedModules(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Optional[Sequence[str]], target: Any = None) -> Any:
        return importlib.util.spec_from_loader(name, _Alias(MOVED[name])) if name in MOVED else None


def install() -> None:
    """Resolve the old module names (once per process)."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModules())
