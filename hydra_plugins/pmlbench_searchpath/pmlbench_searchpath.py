"""Hydra SearchPathPlugin: the YAML presets of plugin distributions on pmlbench's search path.

Hydra imports every module under the ``hydra_plugins`` namespace package and calls the
search-path plugins it finds whenever it builds a config search path, for any Hydra app in
the environment. This one acts only for pmlbench's own config tree: it appends
``pkg://<package>`` for each package declared in the ``pmlbench.presets`` entry-point
group (see pmlbench.plugins.presets), after pmlbench's own config directory, so a plugin's
preset never shadows one of pmlbench's. It serves the command line, the Python API and
Hydra's Compose API alike, without rewriting ``sys.argv``.
"""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

PROVIDER = "pmlbench.presets"
_FILE = "file://"


def _local_path(entry: str) -> Path | None:
    """The directory of a search-path entry (``file://<dir>`` or a bare path), else None."""
    if entry.startswith(_FILE):
        return Path(entry[len(_FILE) :])
    return None if "://" in entry else Path(entry)


def _is_pmlbench(search_path: ConfigSearchPath) -> bool:
    """Whether the search path holds pmlbench's config directory."""
    from pmlbench.hydra_app.config_tree import config_dir

    ours = config_dir().resolve()
    for element in search_path.get_path():
        path = _local_path(str(element.path or ""))
        if path is not None and path.resolve() == ours:
            return True
    return False


class PmlbenchSearchPathPlugin(SearchPathPlugin):
    """Append the preset packages of installed plugin distributions (pmlbench apps only)."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        if not _is_pmlbench(search_path):
            return
        from pmlbench.plugins.presets import preset_sources

        present = {str(element.path) for element in search_path.get_path()}
        for source in preset_sources():
            if source.searchpath not in present:
                search_path.append(provider=PROVIDER, path=source.searchpath)
