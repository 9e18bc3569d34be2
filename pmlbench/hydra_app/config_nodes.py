"""Automatic Hydra config nodes for plugins.

Each plugin's hyper-parameters (pmlbench.plugins.parameters) become a node in Hydra's
ConfigStore, so ``method=<name> method.<param>=<value>`` works for any installed plugin
without YAML. A method's node also carries the ``tune`` and ``bipartition`` nodes, their
defaults taken from pmlbench.protocol.settings (a method's ``default_bipartition`` and
``default_tuning_grid`` on top). A YAML file of another name in ``conf/<group>/`` may build
on the automatic node through its defaults list (see docs/plugins.md).
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from pmlbench.errors import PluginError
from pmlbench.hydra_app.overrides import hidden_name_problem
from pmlbench.plugins import registry
from pmlbench.plugins.parameters import plugin_parameters
from pmlbench.protocol.method_defaults import method_node
from pmlbench.protocol.settings import defaults


def register_config_nodes() -> list[str]:
    """Store a node for every dataset, noise and method plugin; return problems found. A
    plugin whose entry-point or distribution name holds a hidden character
    (pmlbench.hydra_app.overrides.hidden_name_problem) gets no node: Hydra would print the
    name raw in ``pmlbench --help`` and its errors, and it cannot be selected anyway."""
    store = ConfigStore.instance()
    problems: list[str] = []
    for kind in ("dataset", "noise", "method"):
        for name, info in registry.plugins(kind).items():
            hidden = hidden_name_problem(kind, name, info.distribution)
            if hidden is not None:
                # such a name would act in every place Hydra prints the groups' options
                # (--help, an unknown option's error); it cannot be selected either
                problems.append(f"{hidden}; it is not offered")
                continue
            try:
                obj = info.load()
                if kind == "method":
                    store.store(
                        group="method",
                        name=name,
                        node=method_node(name, obj),
                        package="_global_",
                        provider=info.distribution,
                    )
                else:
                    node = {"name": name, **plugin_parameters(kind, obj)}
                    store.store(group=kind, name=name, node=node, provider=info.distribution)
            except PluginError as exc:
                problems.append(str(exc))
                # A bare node keeps the name selectable; the run then reports the real problem.
                node = {"name": name}
                if kind == "method":
                    node = {
                        "method": node,
                        "tune": {"grid": {}, **defaults("tune")},
                        "bipartition": defaults("bipartition"),
                    }
                store.store(
                    group=kind,
                    name=name,
                    node=node,
                    package="_global_" if kind == "method" else None,
                    provider=info.distribution,
                )
    return problems
