"""A label taxonomy (a tree given by parent links) and the quantities SVMD's graph loss needs.

Following the paper's section 6.4 (after Cai & Hofmann 2004), every node counts as
its own ancestor; with ``anc(y)`` the path from ``y`` to the root:

- distance (eq. 62): ``Delta(y, y') = |anc(y) symmetric-difference anc(y')| / 2``,
  the shortest path with edge weight 1/2;
- label kernel (eq. 65): ``kappa(y, y') = |anc(y) intersect anc(y')|``, the number of
  common ancestors.
"""

from __future__ import annotations

import numpy as np


class Taxonomy:
    """A tree from ``{child: parent}`` (a root's parent is None or absent)."""

    def __init__(self, parents):
        if not isinstance(parents, dict):
            raise TypeError(f"taxonomy must be a dict {{child: parent}}, got {type(parents).__name__}")
        self.parents = dict(parents)

    def ancestors(self, node):
        """The set of ``node`` and all its ancestors up to the root."""
        seen = []
        current = node
        while current is not None:
            if current in seen:
                raise ValueError(f"taxonomy has a cycle through {current!r}; give each node one parent, "
                                 "the root None")
            seen.append(current)
            current = self.parents.get(current)
        return set(seen)

    def _check_labels(self, labels):
        known = set(self.parents) | {p for p in self.parents.values() if p is not None}
        missing = [lab for lab in labels if _key(lab) not in known]
        if missing:
            raise ValueError(f"labels {missing[:10]} are not nodes of the taxonomy; add them with their parent")

    def distance_matrix(self, labels):
        """``Delta`` (eq. 62) between the given labels, shape ``(n, n)``."""
        labels = [_key(lab) for lab in labels]
        self._check_labels(labels)
        anc = [self.ancestors(lab) for lab in labels]
        return np.array([[0.5 * len(a ^ b) for b in anc] for a in anc], dtype=np.float64)

    def label_kernel(self, labels):
        """``kappa`` (eq. 65) between the given labels, shape ``(n, n)``."""
        labels = [_key(lab) for lab in labels]
        self._check_labels(labels)
        anc = [self.ancestors(lab) for lab in labels]
        return np.array([[float(len(a & b)) for b in anc] for a in anc], dtype=np.float64)


def _key(label):
    """numpy scalars (from ``classes_``) as the plain Python values a dict is keyed by."""
    return label.item() if isinstance(label, np.generic) else label
