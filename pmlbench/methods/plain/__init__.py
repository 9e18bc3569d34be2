"""PLAIN: deep partial multi-label learning with graph disambiguation (Wang et al., IJCAI 2023).

"Deep Partial Multi-Label Learning with Graph Disambiguation" (Haobo Wang, Shisong Yang,
Gengyu Lyu, Weiwei Liu, Tianlei Hu, Ke Chen, Songhe Feng, Gang Chen). The paper's full text
could not be read while this package was written, so no equation numbers are cited: the
formulas in these modules are the ones the authors' PyTorch code (github HBzju-PLAIN/PLAIN,
``main.py`` and ``models.py``) computes, named as the code's comments map them to the paper.

- :mod:`~pmlbench.methods.plain.graphs`: the instances' kNN graph and the labels'
  co-occurrence graph, built once per fit (NumPy).
- :mod:`~pmlbench.methods.plain.propagation`: per epoch, pseudo-labels by gradient steps on
  a propagation objective over both graphs, anchored at the candidates and at the network's
  outputs.
- :mod:`~pmlbench.methods.plain.network`: the MLP and its SGD training on the pseudo-labels.

The estimator is :class:`~pmlbench.methods.plain.estimator.PLAIN` (plugin ``plain``). It needs
PyTorch, an optional extra (``pip install "pmlbench[deep]"``), imported only when a fit runs
(:mod:`pmlbench.core.torch_runtime`); docs/methods/plain.md lists where pmlbench departs from the
authors' code and how closely the two agree.
"""

from pmlbench.methods.plain.estimator import PLAIN

__all__ = ["PLAIN"]
