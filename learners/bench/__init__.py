"""``learners-bench``: the OLK paper's synthetic experiments (Examples 1-3), averaged over seeds.

- :mod:`learners.bench.example1`: classification, OLK_C against NORMA, perceptrons,
  Projectron and a batch SVM (the paper's Figs. 2-4 of section IV-A);
- :mod:`learners.bench.example2`: regression, OLK_R against NORMA, kernel perceptron,
  KRLS and LS-SVM (Figs. 1 and 6);
- :mod:`learners.bench.example3`: novelty detection, OLK_N against NORMA (Fig. 8);
- :mod:`learners.bench.cli`: the console script.
"""
