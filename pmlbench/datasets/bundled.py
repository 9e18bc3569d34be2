"""The bundled datasets: the PML3ER paper's five benchmarks and three real PML datasets.

Benchmark datasets (clean ground truth; candidate-label noise comes from a noise model):

- genbase: protein function classes, Diplaris et al., PCI 2005 (Mulan; 662 x 1185, 27 labels).
- medical: clinical free text, Pestian et al., BioNLP 2007 (Mulan; 978 x 1449, 45 labels).
- arts: Yahoo! Arts web pages, Ueda & Saito, NIPS 2003 (5000 x 462 version of Zhang et al.).
- corel5k: images, Duygulu et al., ECCV 2002 (Mulan; 5000 x 499, 374 labels).
- bibtex: BibTeX entries, Katakis et al., ECML/PKDD discovery challenge 2008 (Mulan; 7395 x 1836,
  159 labels).

Real PML datasets (natural candidate labels, Yu et al., ICDM 2018; PALM lab release): yeastbp,
yeastcc, yeastmf (6139 x 6139 features; Gene Ontology labels). Runs on these train on the
released candidate labels; no noise model is applied.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pmlbench.datasets.dataset import Dataset
from pmlbench.datasets.npz import load_npz

DATA_DIR = Path(__file__).parent / "data"

CITATIONS = {
    "genbase": "S. Diplaris et al., Protein classification with multiple algorithms, PCI 2005",
    "medical": "J. Pestian et al., A shared task involving multi-label classification of "
    "clinical free text, BioNLP 2007",
    "arts": "N. Ueda and K. Saito, Parametric mixture models for multi-labeled text, NIPS 2003",
    "corel5k": "P. Duygulu et al., Object recognition as machine translation, ECCV 2002",
    "bibtex": "I. Katakis, G. Tsoumakas and I. Vlahavas, Multilabel text classification for "
    "automated tag suggestion, ECML/PKDD Discovery Challenge 2008",
    "yeastbp": "G. Yu et al., Feature-induced partial multi-label learning, ICDM 2018",
    "yeastcc": "G. Yu et al., Feature-induced partial multi-label learning, ICDM 2018",
    "yeastmf": "G. Yu et al., Feature-induced partial multi-label learning, ICDM 2018",
}


@lru_cache(maxsize=8)
def _cached(name: str) -> Dataset:
    return load_npz(DATA_DIR / f"{name}.npz", name=name, meta={"citation": CITATIONS[name]})


def _bundled(name: str, doc: str):
    def loader() -> Dataset:
        return _cached(name)

    loader.__name__ = name
    loader.__doc__ = doc
    return loader


genbase = _bundled(
    "genbase", "Genbase protein functions (662 x 1185, 27 labels; Diplaris et al. 2005)."
)
medical = _bundled("medical", "Medical clinical text (978 x 1449, 45 labels; Pestian et al. 2007).")
arts = _bundled("arts", "Yahoo! Arts web pages (5000 x 462, 26 labels; Ueda & Saito 2003).")
corel5k = _bundled("corel5k", "Corel5k images (5000 x 499, 374 labels; Duygulu et al. 2002).")
bibtex = _bundled("bibtex", "BibTeX tags (7395 x 1836, 159 labels; Katakis et al. 2008).")
yeastbp = _bundled(
    "yeastbp", "Yeast GO biological process, real PML (6139 x 6139, 217 labels; Yu et al. 2018)."
)
yeastcc = _bundled(
    "yeastcc", "Yeast GO cellular component, real PML (6139 x 6139, 50 labels; Yu et al. 2018)."
)
yeastmf = _bundled(
    "yeastmf", "Yeast GO molecular function, real PML (6139 x 6139, 39 labels; Yu et al. 2018)."
)
