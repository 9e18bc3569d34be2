"""What the protocol asks of the plugin layer: checked plugins it can use without checks.

The protocol asks once per experiment for each plugin it needs and gets back an object that
has already passed its contract (pmlbench.plugins.contracts):

- :class:`DatasetSource`, whose ``load`` gives a checked
  :class:`~pmlbench.datasets.dataset.Dataset` (:func:`load_dataset` in one call).
- :class:`NoiseModel` (:func:`noise_model`), whose ``candidates`` are checked n x l 0/1
  matrices containing the true labels.
- :class:`MethodFactory` (:func:`method_factory`), whose parameters were validated against
  the method's declared constraints when it was made, before any data is loaded; ``build``
  gives a fresh estimator per split, ``handed_read_only`` names it when it writes into the
  read-only arrays it is handed, and ``outputs`` checks what the estimator returned.
- :func:`checked_metric` / :func:`load_metric` / :func:`load_metrics`: checked
  :class:`~pmlbench.metrics.base.Metric`s.

Each is made from the plugin's registration (``configure``, :func:`checked_metric`), which
pmlbench.protocol.experiment.prepare looks up once per plugin of an experiment; the
functions named after a config node or a name look it up themselves.

Failures inside third-party code become one-line :class:`~pmlbench.errors.PluginError`s
naming the plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np

from pmlbench.core.parameters import declared_constraints, validate_parameters
from pmlbench.datasets.dataset import Dataset
from pmlbench.errors import PmlbenchError
from pmlbench.metrics.base import Metric
from pmlbench.plugins import contracts, registry
from pmlbench.plugins.registry import PluginInfo


def plugin_params(node: dict[str, Any]) -> dict[str, Any]:
    """The parameters of a plugin's config node (everything but its ``name``)."""
    return {k: v for k, v in node.items() if k != "name"}


@dataclass(frozen=True)
class DatasetSource:
    """A dataset plugin with its configured parameters; nothing is imported or read before
    :meth:`load`."""

    info: PluginInfo
    params: dict[str, Any]

    @classmethod
    def configure(cls, info: PluginInfo, node: dict[str, Any]) -> DatasetSource:
        """The dataset ``info`` registers, with the parameters of its config node."""
        return cls(info, plugin_params(node))

    @property
    def name(self) -> str:
        return self.info.name

    def load(self) -> Dataset:
        """The dataset, loaded and checked."""
        loader = self.info.load()
        with contracts.plugin_call(self.info, "loading the dataset"):
            dataset = loader(**self.params)
        return contracts.check_dataset(self.info, dataset)


def load_dataset(node: dict[str, Any]) -> Dataset:
    """The dataset a ``dataset`` config node names, loaded and checked."""
    return DatasetSource.configure(registry.get("dataset", node["name"]), node).load()


@dataclass(frozen=True)
class NoiseModel:
    """A noise plugin with its configured parameters; draws checked candidate labels."""

    info: PluginInfo
    function: Callable[..., Any]
    params: dict[str, Any]

    @classmethod
    def configure(cls, info: PluginInfo, node: dict[str, Any]) -> NoiseModel:
        """The noise model ``info`` registers, the parameters of its config node checked."""
        return cls(*_configured(info, node))

    @property
    def name(self) -> str:
        return self.info.name

    def candidates(self, Y_true: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Candidate labels for ``Y_true``: an n x l 0/1 matrix containing every true label."""
        with contracts.plugin_call(self.info, "drawing candidate labels"):
            Y_cand = self.function(Y_true.copy(), rng, **self.params)
        return contracts.check_noise_output(self.info, Y_true, Y_cand)


def _configured(info: PluginInfo, node: dict[str, Any]) -> tuple[PluginInfo, Any, dict[str, Any]]:
    """The plugin ``info`` registers, loaded, with the parameters of its config node checked
    against the constraints it declares (keys ``<kind>.<param>`` in errors)."""
    obj = info.load()
    params = plugin_params(node)
    validate_parameters(params, declared_constraints(obj), prefix=info.kind)
    return info, obj, params


def noise_model(node: dict[str, Any]) -> NoiseModel:
    """The noise model a ``noise`` config node names, its parameters checked."""
    return NoiseModel.configure(registry.get("noise", node["name"]), node)


@dataclass(frozen=True)
class MethodFactory:
    """A method plugin with validated parameters; builds one estimator per split."""

    info: PluginInfo
    cls: Any
    params: dict[str, Any]

    @classmethod
    def configure(cls, info: PluginInfo, node: dict[str, Any]) -> MethodFactory:
        """The method ``info`` registers, the parameters of its config node checked."""
        return cls(*_configured(info, node))

    @property
    def name(self) -> str:
        return self.info.name

    def build(self, random_state: int) -> Any:
        """A new estimator; a ``random_state=None`` parameter gets the split's seed."""
        try:
            estimator = self.cls(**self.params)
        except TypeError as exc:
            raise PmlbenchError(f"cannot build method {self.name!r}: {exc}") from None
        contracts.check_method_api(self.info, estimator)
        if hasattr(estimator, "get_params"):
            params = estimator.get_params(deep=False)
            if "random_state" in params and params["random_state"] is None:
                estimator.set_params(random_state=random_state)
        return estimator

    def handed_read_only(self, what: str) -> AbstractContextManager[None]:
        """Around the calls that hand the method read-only arrays (``what``: "fitting", ...):
        a write into one fails naming the method (:func:`contracts.method_inputs`)."""
        return contracts.method_inputs(self.info, what)

    def diagnostics(self, estimator: Any) -> dict[str, Any]:
        """The fitted estimator's ``diagnostics_``, checked to be storable ({} if unset)."""
        return contracts.check_method_diagnostics(self.info, estimator)

    def scores(self, scores: Any, shape: tuple[int, int]) -> np.ndarray:
        """The estimator's scores as checked float64, before anything reads them."""
        return contracts.check_method_scores(self.info, scores, shape)

    def outputs(
        self, scores: Any, Y_pred: Any, shape: tuple[int, int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The estimator's scores (float64) and predictions (uint8), checked against ``shape``."""
        return contracts.check_method_output(self.info, scores, Y_pred, shape)


def method_factory(node: dict[str, Any]) -> MethodFactory:
    """The method a ``method`` config node names, its parameters checked before any work."""
    return MethodFactory.configure(registry.get("method", node["name"]), node)


def checked_metric(info: PluginInfo) -> Metric:
    """The metric plugin ``info`` registers, checked."""
    return contracts.check_metric(info, info.load())


def load_metric(name: str) -> Metric:
    """The metric plugin called ``name``, checked."""
    return checked_metric(registry.get("metric", name))


def load_metrics(names: list[str]) -> dict[str, Metric]:
    """Checked metric plugins by name, in the order given."""
    return {name: load_metric(name) for name in names}
