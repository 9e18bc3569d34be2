"""PARTICLE (Fang & Zhang, AAAI 2019): credible labels by propagation, then MAP or VLS.

- ``credible``: stage 1, label propagation over a kNN graph and credible-label selection.
- ``clr``: calibrated label ranking with a virtual label (the VLS learner's binary problems).
- ``vls``: the ``particle_vls`` method; ``map``: the ``particle_map`` method (ML-kNN).
"""

from pmlbench.methods.particle.map import ParticleMAP
from pmlbench.methods.particle.vls import ParticleVLS

__all__ = ["ParticleMAP", "ParticleVLS"]
