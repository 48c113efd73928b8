"""Artifacts stored under their types' earlier homes still load.

ZenML stores each artifact with its type's import path, and loads the type from that path. Every stored type now
lives in `llm_engineering.evaluation.stored`, which does not move; artifacts stored before it name the module that
held the type then: the flat `evaluation/` modules (before the rooms), then the rooms' logic modules. Each such
module name is mapped here to the stored module that holds its types now:

- a module of that name that still exists loads as usual, and a name it lacks is looked up in the stored module
  (so a type's old logic module may drop it, move or be split without breaking old artifacts);
- a module of that name that no longer exists is the stored module itself.

Nothing else uses the old names. Old artifacts, loaded: `tests/unit/test_stored_types.py`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any, Optional, Sequence

_STORED = "llm_engineering.evaluation.stored."
OLD_HOMES = {  # a module name stored artifacts carry -> the stored module that holds its types now
    # before evaluation/ was split into rooms
    "llm_engineering.evaluation.publishing": _STORED + "publishing",
    "llm_engineering.evaluation.summary": _STORED + "summary",
    "llm_engineering.evaluation.judge_check": _STORED + "trust",
    "llm_engineering.evaluation.pairwise": _STORED + "pairwise",
    "llm_engineering.evaluation.label_agreement": _STORED + "labels",
    "llm_engineering.evaluation.generation": _STORED + "generation",  # then a module, now the room's package
    # before the stored types had a package of their own
    "llm_engineering.infrastructure.publishing": _STORED + "publishing",
    "llm_engineering.evaluation.report.summary": _STORED + "summary",
    "llm_engineering.evaluation.trust.judge_check": _STORED + "trust",
    "llm_engineering.evaluation.judging.pairwise": _STORED + "pairwise",
    "llm_engineering.evaluation.trust.label_agreement": _STORED + "labels",
    "llm_engineering.evaluation.generation.answers": _STORED + "generation",
}


def _stored_names_too(module: ModuleType, stored: str) -> None:
    """Let `module` answer, for a name it lacks, with the stored module's (PEP 562's module `__getattr__`)."""
    own = module.__dict__.get("__getattr__")

    def __getattr__(name: str) -> Any:
        if own is not None:
            try:
                return own(name)
            except AttributeError:
                pass
        if not name.startswith("__"):
            found = getattr(importlib.import_module(stored), name, None)
            if found is not None:
                return found
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]


class _Alias(importlib.abc.Loader):
    """A module gone: its name is the stored module."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: Any) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        pass


class _WithStoredNames(importlib.abc.Loader):
    """A module that still exists: loaded by its own loader, then given the stored module's names it lacks."""

    def __init__(self, loader: Any, target: str) -> None:
        self.loader, self.target = loader, target

    def create_module(self, spec: Any) -> Optional[ModuleType]:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        _stored_names_too(module, self.target)

    def __getattr__(self, name: str) -> Any:  # the rest of the loader's interface (get_source for tracebacks, ...)
        return getattr(self.loader, name)


class _OldHomes(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Optional[Sequence[str]], target: Any = None) -> Any:
        if name not in OLD_HOMES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            return importlib.util.spec_from_loader(name, _Alias(OLD_HOMES[name]))
        spec.loader = _WithStoredNames(spec.loader, OLD_HOMES[name])
        return spec


def install() -> None:
    """Resolve the old module names (once per process; before they are imported, `llm_engineering/__init__.py`)."""
    if any(isinstance(finder, _OldHomes) for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, _OldHomes())
    for name, stored in OLD_HOMES.items():  # imported already (none should be): give them the names now
        if name in sys.modules:
            _stored_names_too(sys.modules[name], stored)
