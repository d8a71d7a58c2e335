"""The README's headline quality figures, measured again on the real data (skipped where it is absent).

Pinned: the default ``olkn``'s F on the full CDnet highway and on its camera-jittered
copy (``bgsub eval --augment jitter``; about 20 s of CPU each), and the mean F of the
defaults of ``olkn`` and ``norma`` over the 9 short UCSD clips (a documented subset
of the 16 dev sequences, for speed: the full dev mean takes minutes); ``oem``'s F
on highway and its mean F over all 16 dev sequences (about 15 s: it is fast); BGSLibrary's
peers' mean F over the UCSD clips, where pybgs is installed. Scoring is
``bgsub eval``'s (:func:`bgsub.commands.eval.evaluate`). A change that moves these
by more than their tolerance (0.005 for olkn, 0.01 for the others) must update README.md and
docs/parameters.md.
"""

from __future__ import annotations

import pytest

import bgsub
from bgsub.commands.eval import evaluate, resolve_sequences

pytestmark = pytest.mark.data

#: Documented values (README "Measured results", docs/parameters.md): olkn's after issue 13's fifteenth round (the
#: larger median while the mask is cluttered), norma's after the eleventh (the illumination compensation).
HIGHWAY_F_OLKN = 0.964
JITTERED_HIGHWAY_F_OLKN = 0.959
UCSD_MEAN_F = {"olkn": 0.384, "norma": 0.330}
#: The olkn pins' tolerance: issue 14's "quality unchanged" (the runs are seeded; only floating-point differences
#: between machines move them, by far less).
OLKN_TOLERANCE = 0.005
#: README "Parameters" and docs/parameters.md (eighth round): olkn's accurate preset on UCSD birds, where the
#: defaults score 0.176 (70 frames of 240x156; the preset runs at about 10 fps).
BIRDS_F_ACCURATE = 0.701
#: README "Measured results" and docs/oem.md: oem against MOG2's 0.708 and 0.315.
HIGHWAY_F_OEM = 0.876
DEV_MEAN_F_OEM = 0.441
#: docs/parameters.md "The published peers": BGSLibrary's, mean F over the 9 UCSD clips (needs pybgs).
UCSD_MEAN_F_PEERS = {"subsense": 0.401, "lobster": 0.372, "pbas": 0.317, "vibe": 0.295}


def test_default_olkn_highway_f(highway):
    rows, mean, failed = evaluate([highway], lambda: bgsub.create("olkn"))
    assert not failed
    assert rows[0]["F"] == pytest.approx(HIGHWAY_F_OLKN, abs=OLKN_TOLERANCE)


def test_default_olkn_jittered_highway_f(highway):
    # the blink feedback's target: issue 13 asks >= 0.85 on the jittered highway
    rows, mean, failed = evaluate([highway], lambda: bgsub.create("olkn"), augment="jitter")
    assert not failed
    assert rows[0]["F"] == pytest.approx(JITTERED_HIGHWAY_F_OLKN, abs=OLKN_TOLERANCE)


@pytest.mark.parametrize("algo", sorted(UCSD_MEAN_F))
def test_default_mean_f_on_the_ucsd_clips(shared_data, algo):
    root = shared_data / "bgs" / "ucsd"
    if not root.is_dir():
        pytest.skip(f"UCSD sequences not found at {root}")
    paths = resolve_sequences([root])
    assert len(paths) == 9
    rows, mean, failed = evaluate(paths, lambda: bgsub.create(algo))
    assert not failed
    assert mean["F"] == pytest.approx(UCSD_MEAN_F[algo], abs=OLKN_TOLERANCE if algo == "olkn" else 0.01)


def test_accurate_preset_on_ucsd_birds(shared_data):
    birds = shared_data / "bgs" / "ucsd" / "birds"
    if not birds.is_dir():
        pytest.skip(f"UCSD birds not found at {birds}")
    rows, mean, failed = evaluate([birds], lambda: bgsub.createOLKN(preset="accurate"))
    assert not failed
    assert rows[0]["F"] == pytest.approx(BIRDS_F_ACCURATE, abs=0.01)


@pytest.mark.parametrize("algo", sorted(UCSD_MEAN_F_PEERS))
def test_published_peers_mean_f_on_the_ucsd_clips(shared_data, algo):
    from bgsub import bgslibrary

    if not bgslibrary.available():
        pytest.skip("pybgs (BGSLibrary's wrapper) is not installed: apt install libopencv-dev cmake, "
                    "then pip install pybgs")
    root = shared_data / "bgs" / "ucsd"
    if not root.is_dir():
        pytest.skip(f"UCSD sequences not found at {root}")
    rows, mean, failed = evaluate(resolve_sequences([root]), lambda: bgsub.create(algo))
    assert not failed
    assert mean["F"] == pytest.approx(UCSD_MEAN_F_PEERS[algo], abs=0.002)  # seeded: the same masks every run


def test_default_oem_highway_and_dev_mean_f(shared_data):
    root = shared_data / "bgs"
    groups = [root / "cdnet2014" / "highway", root / "sbi", root / "ucsd"]
    if not all(p.is_dir() for p in groups):
        pytest.skip(f"the 16 dev sequences (CDnet highway, SBI, UCSD) not all found under {root}")
    paths = resolve_sequences([groups[0], *sorted(groups[1].iterdir()), *sorted(groups[2].iterdir())])
    assert len(paths) == 16
    rows, mean, failed = evaluate(paths, lambda: bgsub.create("oem"))
    assert not failed
    assert rows[0]["F"] == pytest.approx(HIGHWAY_F_OEM, abs=0.01)
    assert mean["F"] == pytest.approx(DEV_MEAN_F_OEM, abs=0.01)
