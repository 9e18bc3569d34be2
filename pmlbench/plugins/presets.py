"""YAML presets shipped by plugin distributions.

pmlbench's own presets live in ``conf/<group>/``. A distribution ships more by declaring an
entry point in the ``pmlbench.presets`` group whose value is an importable package (with an
``__init__.py``) holding ``method/``, ``noise/`` and ``dataset/`` folders of YAML files::

    [project.entry-points."pmlbench.presets"]
    my-dist = "my_package.conf"

Each such package is appended to Hydra's config search path (``pkg://my_package.conf``, by the
SearchPathPlugin in ``hydra_plugins/pmlbench_searchpath``), so
``method=<preset>`` works exactly like a preset in ``conf/method/``. pmlbench's own files come
first on the path: a plugin cannot shadow them.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from importlib.metadata import entry_points
from pathlib import Path

from pmlbench.errors import PluginError

GROUP = "pmlbench.presets"


@dataclass(frozen=True)
class PresetSource:
    """One package of YAML presets and the distribution that ships it."""

    package: str
    distribution: str

    @property
    def searchpath(self) -> str:
        return f"pkg://{self.package}"

    def folder(self) -> Path:
        try:
            root = resources.files(self.package)
        except (ModuleNotFoundError, TypeError, ValueError) as exc:
            raise PluginError(
                f"preset package {self.package!r} of distribution {self.distribution!r} cannot "
                f"be imported ({exc}); fix its pmlbench.presets entry point or reinstall it"
            ) from None
        if not root.joinpath("__init__.py").is_file():
            raise PluginError(
                f"preset package {self.package!r} of distribution {self.distribution!r} has no "
                "__init__.py; Hydra only searches packages"
            )
        return Path(str(root))


def preset_sources() -> list[PresetSource]:
    """Every preset package declared through the ``pmlbench.presets`` entry-point group."""
    sources = []
    for ep in entry_points(group=GROUP):
        if ep.attr:
            dist = ep.dist.metadata["Name"] if ep.dist is not None else "<unknown>"
            raise PluginError(
                f"the pmlbench.presets entry point {ep.name!r} of distribution "
                f"{dist!r} must name a package, not {ep.value!r}"
            )
        dist = ep.dist.metadata["Name"] if ep.dist is not None else "<unknown>"
        source = PresetSource(ep.module, dist)
        if source not in sources:
            sources.append(source)
    return sorted(sources, key=lambda s: s.package)


def plugin_presets(groups: list[str]) -> dict[str, set[str]]:
    """Names of the YAML presets that plugin distributions ship, by config group."""
    found: dict[str, set[str]] = {group: set() for group in groups}
    for source in preset_sources():
        folder = source.folder()
        for group in groups:
            found[group] |= {p.stem for p in (folder / group).glob("*.yaml")}
    return found
