"""The bundled datasets: fifteen multi-label benchmarks and four real PML datasets.

Benchmark datasets of the PML3ER paper (clean ground truth; candidate-label noise comes from a
noise model):

- genbase: protein function classes, Diplaris et al., PCI 2005 (Mulan; 662 x 1185, 27 labels).
- medical: clinical free text, Pestian et al., BioNLP 2007 (Mulan; 978 x 1449, 45 labels).
- arts: Yahoo! Arts web pages, Ueda & Saito, NIPS 2003 (5000 x 462 version of Zhang et al.).
- corel5k: images, Duygulu et al., ECCV 2002 (Mulan; 5000 x 499, 374 labels).
- bibtex: BibTeX entries, Katakis et al., ECML/PKDD discovery challenge 2008 (Mulan; 7395 x 1836,
  159 labels).

Ten more multi-label benchmarks of the wider PML literature (clean ground truth, noise model),
from the MATLAB copies in github ZesenChen/multi-label-dataset (Mulan, MEKA and Yahoo originals):
emotions, yeast, enron, cal500, slashdot, languagelog, recreation, science, corel16k001 and
delicious (sizes and quirks in docs/datasets.md).

Real PML datasets (natural candidate labels): yeastbp, yeastcc, yeastmf (Yu et al., ICDM 2018;
PALM lab release; 6139 x 6139 features; Gene Ontology labels) and mirflickr5k (a 5000-image
subset of the 10,433-image PML mirflickr set; 100 features, 7 labels). Runs on these train on
the released candidate labels; no noise model is applied.
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
    "emotions": "K. Trohidis et al., Multi-label classification of music into emotions, ISMIR 2008",
    "yeast": "A. Elisseeff and J. Weston, A kernel method for multi-labelled classification, "
    "NIPS 2001",
    "enron": "B. Klimt and Y. Yang, The Enron corpus: a new dataset for email classification "
    "research, ECML 2004",
    "cal500": "D. Turnbull et al., Semantic annotation and retrieval of music and sound effects, "
    "IEEE TASLP 2008",
    "slashdot": "J. Read, Scalable multi-label classification, PhD thesis, University of "
    "Waikato, 2010",
    "languagelog": "J. Read, Scalable multi-label classification, PhD thesis, University of "
    "Waikato, 2010",
    "recreation": "N. Ueda and K. Saito, Parametric mixture models for multi-labeled text, "
    "NIPS 2003",
    "science": "N. Ueda and K. Saito, Parametric mixture models for multi-labeled text, NIPS 2003",
    "corel16k001": "K. Barnard et al., Matching words and pictures, JMLR 2003",
    "delicious": "G. Tsoumakas, I. Katakis and I. Vlahavas, Effective and efficient multilabel "
    "classification in domains with large number of labels, ECML/PKDD MMD workshop 2008",
    "mirflickr5k": "M. J. Huiskes and M. S. Lew, The MIR Flickr retrieval evaluation, MIR 2008; "
    "PML version: M.-K. Xie and S.-J. Huang, Partial multi-label learning, AAAI 2018 "
    "(a 5000-image subset of the 10,433-image PML set)",
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
emotions = _bundled("emotions", "Emotions in music (593 x 72, 6 labels; Trohidis et al. 2008).")
yeast = _bundled("yeast", "Yeast gene functions (2417 x 103, 14 labels; Elisseeff & Weston 2001).")
enron = _bundled("enron", "Enron e-mails (1702 x 1001, 53 labels; Klimt & Yang 2004).")
cal500 = _bundled("cal500", "CAL500 songs (502 x 68, 174 labels; Turnbull et al. 2008).")
slashdot = _bundled("slashdot", "Slashdot articles (3782 x 1079, 22 labels; Read 2010).")
languagelog = _bundled(
    "languagelog", "Language Log blog posts (1459 x 1004, 75 labels; Read 2010)."
)
recreation = _bundled(
    "recreation", "Yahoo! Recreation web pages (5000 x 606, 22 labels; Ueda & Saito 2003)."
)
science = _bundled(
    "science", "Yahoo! Science web pages (5000 x 743, 40 labels; Ueda & Saito 2003)."
)
corel16k001 = _bundled(
    "corel16k001", "Corel16k sample 1 images (13766 x 500, 153 labels; Barnard et al. 2003)."
)
delicious = _bundled(
    "delicious", "Delicious bookmarks (16105 x 500, 983 labels; Tsoumakas et al. 2008)."
)
mirflickr5k = _bundled(
    "mirflickr5k",
    "MIRFLICKR images, real PML, 5000-image subset of the 10,433-image set (5000 x 100, "
    "7 labels; Huiskes & Lew 2008, Xie & Huang 2018).",
)
