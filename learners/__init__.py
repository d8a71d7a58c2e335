"""Online learning with kernels: NORMA and OLK, with the baselines they are compared to."""

__version__ = "0.1.0"
