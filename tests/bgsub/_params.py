"""Parameter sets that the scenario tests were built for."""

#: olkn's earlier defaults where they differ from today's (``width 40, nu 0.1, C 0.2,
#: rho_nu 0.1``, no stabiliser, no warm-up, no component filters): the small synthetic scenes of the tests of other mechanisms
#: (per-pixel widths, feedback, texture, the quantile offset) are sized for that kernel's reach and pace; the
#: defaults' own behaviour is tested on real frames and in the data tests.
WIDE_KERNEL = dict(width=40.0, nu=0.1, C=0.2, rho_nu=0.1, stabilise="off", warmup_frames=0, min_area=0, fill_holes=0,
              median_max=0)
