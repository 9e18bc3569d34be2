"""Constants of MATLAB that the ports of the authors' MATLAB code reproduce (used by
PML-LRIG, PMNDP and PML-DDA).

- :data:`MATLAB_EPS`: MATLAB's ``eps``, the spacing of float64 at 1 (2⁻⁵²), which the
  authors' code adds to denominators of multiplicative updates and to matrices before a
  normalisation; a port adds the same value so that its numbers are the code's.
"""

from __future__ import annotations

import numpy as np

MATLAB_EPS = float(np.finfo(np.float64).eps)
