"""What the deep (PyTorch) methods share: the optional dependency, the device, determinism.

PyTorch is an optional extra (``pip install "pmlbench[deep]"``), so nothing here imports it
at module level: importing pmlbench, ``pmlbench list`` and every other method work without
it. A deep method declares its ``device`` parameter with :func:`device_constraint`, a
constraint that also checks that PyTorch is installed and that the device is present; the
runner checks constraints when it prepares an experiment, so a missing PyTorch or GPU stops
the run before any data is loaded, with one line naming the fix (:func:`require_device`).

A fit runs inside :func:`torch_session`: PyTorch's deterministic algorithms and the method's
thread count, both restored afterwards; a deep method draws its random numbers from its own
``torch.Generator``, never from PyTorch's global one. Importing torch in a module of a method
is also what gives its units the torch version in their content key (pmlbench.runner.units).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pmlbench.core.parallel import worker_budget
from pmlbench.core.parameters import Options
from pmlbench.errors import PmlbenchError

CPU, CUDA = "cpu", "cuda"
DEVICES = (CPU, CUDA)
MINIMUM_TORCH = (2, 13)
INSTALL_HINT = 'pip install "pmlbench[deep]" (torch==2.13.0 for a CPU build)'
# cuBLAS needs a fixed workspace for deterministic results (PyTorch's reproducibility notes)
CUBLAS_WORKSPACE = ":4096:8"


def _torch_version(version: str) -> tuple[int, int]:
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return (0, 0)


def import_torch(method: str) -> Any:
    """The ``torch`` module, or a one-line PmlbenchError naming the extra that installs it."""
    try:
        import torch
    except ImportError:
        raise PmlbenchError(
            f"{method} needs PyTorch, which is not installed; install it with {INSTALL_HINT}"
        ) from None
    if _torch_version(torch.__version__) < MINIMUM_TORCH:
        wanted = ".".join(map(str, MINIMUM_TORCH))
        raise PmlbenchError(
            f"{method} needs PyTorch >= {wanted}, found {torch.__version__}; upgrade with "
            f"{INSTALL_HINT}"
        )
    return torch


def require_device(device: str, method: str) -> Any:
    """``torch``, after checking that it is installed and that ``device`` is present."""
    torch = import_torch(method)
    if device == CUDA and not torch.cuda.is_available():
        raise PmlbenchError(
            f"method.device=cuda but PyTorch sees no CUDA device on this machine "
            f"(torch {torch.__version__}, built {'with' if torch.version.cuda else 'without'} "
            "CUDA); use method.device=cpu"
        )
    return torch


@dataclass(frozen=True)
class DeviceOption(Options):
    """``cpu`` or ``cuda``, on a machine where PyTorch is installed and has that device.

    A constraint like any other (checked when a run prepares its method, before any data is
    loaded), except that an accepted value is also checked against the machine: a missing
    PyTorch or GPU raises :func:`require_device`'s one-line error (naming ``method``)
    instead of "must be ...".
    """

    values: tuple[Any, ...] = DEVICES
    method: str = "this method"

    def accepts(self, value: Any) -> bool:
        if not super().accepts(value):
            return False
        require_device(str(value), self.method)
        return True


def device_constraint(method: str) -> list[Any]:
    """The ``parameter_constraints`` entry of a deep method's ``device`` parameter."""
    return [DeviceOption(method=method)]


def thread_budget(threads: int | None) -> int:
    """``threads``, or for None the job's thread budget: the BLAS/OpenMP limit in force, which
    a parallel launcher lowers for each job (pmlbench.core.parallel.worker_budget)."""
    return int(threads) if threads is not None else worker_budget(None, "method.threads")


@contextlib.contextmanager
def torch_session(device: str, threads: int, method: str) -> Iterator[Any]:
    """``torch`` with deterministic algorithms and ``threads`` intra-op threads inside the
    block; the previous settings are restored on exit."""
    torch = require_device(device, method)
    if device == CUDA:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    previous_threads = torch.get_num_threads()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(max(1, int(threads)))
    try:
        yield torch
    finally:
        torch.set_num_threads(previous_threads)
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
