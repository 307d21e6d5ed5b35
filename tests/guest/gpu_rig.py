"""Loads the GPU guard (issue 47) as the VM runs it: a script beside memory_watcher.py, not a package."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

GUARD_DIR = Path(__file__).resolve().parents[2] / "infra" / "contest" / "guard"
STANDIN = Path(__file__).resolve().parent / "standin" / "nvidia_smi.py"


def load_gpu_guard() -> ModuleType:
    """The module, imported once (it imports memory_watcher from its own folder, as in /opt/notebook-medic)."""
    if "gpu_guard" in sys.modules:
        return sys.modules["gpu_guard"]
    spec = importlib.util.spec_from_file_location("gpu_guard", GUARD_DIR / "gpu_guard.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_guard"] = module
    spec.loader.exec_module(module)
    return module
