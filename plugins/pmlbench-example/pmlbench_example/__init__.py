"""Example third-party plugins for pmlbench, registered only through entry points.

- method ``cwbr``: confidence-weighted binary relevance with logistic regression;
- method ``ext_ridge``: ridge regression run as an external Octave or Python program;
- dataset ``example_synth``: a small seeded synthetic multi-label problem;
- noise ``cooccurrence``: wrong labels drawn in proportion to their co-occurrence with the
  true labels;
- metric ``macro_auc``: ROC AUC averaged over labels.
"""

__version__ = "0.1.0"
