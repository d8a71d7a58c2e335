"""The default masks of olkn, norma, oem and svmd stay byte-identical.

``tests/bgsub/data/mask_hashes.json`` holds, for each sequence and subtractor,
the SHA-256 of the masks ``bgsub.create(algo).apply(frame)`` returns on the
first 120 frames (all of them where fewer), concatenated in order, and the
number of frames. The frames are read as ``bgsub eval`` reads them
(:func:`bgsub.sources.open_source` on the CDnet-layout folder, every frame in
order, whole frames at their own size). The sequences are the bundled sample
clip (always tested) and the 17 real sequences under ``../shared/data/bgs``:
CDnet highway, the six SBI and nine UCSD sequences, Wallflower WavingTrees
(tested where present, marked ``data``; the larger ones and svmd also ``slow``).

The hashes were recorded from the code of commit 0c34525 (before the pipeline and
the model were refactored), norma's again when its score pass moved to row planes
with the Gaussian computed in float32 (CHANGELOG.md). Any change to a default mask, however small, fails
here: a refactoring must keep these hashes; a deliberate change of a default
records them again with::

    NUMBA_CACHE_DIR=... python tests/bgsub/test_mask_hashes.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parent / "data" / "mask_hashes.json"
ALGOS = ("olkn", "norma", "oem", "svmd")
MAX_FRAMES = 120
SAMPLE = "sample"
#: The real sequences, as folders under ``../shared/data/bgs``.
REAL = ("cdnet2014/highway",
        "sbi/Board", "sbi/CAVIAR2", "sbi/CaVignal", "sbi/Foliage", "sbi/IBMtest2", "sbi/Snellen",
        "ucsd/birds", "ucsd/boats", "ucsd/chopper", "ucsd/flock", "ucsd/freeway", "ucsd/ocean",
        "ucsd/peds", "ucsd/traffic", "ucsd/zodiac",
        "wallflower/WavingTrees")
#: Marked ``slow`` on the real data: these sequences (120 frames, larger ones), and svmd everywhere (its frames
#: take 5-10 times olkn's). With a warm numba cache the whole file took 4 min 6 s on the 2-core machine at a load
#: average of 6 (7 min 40 s at 11), svmd most of it; the UCSD clips without svmd about 30 s.
SLOW = frozenset({"cdnet2014/highway", "sbi/Board", "sbi/CAVIAR2", "sbi/CaVignal", "sbi/Foliage",
                  "sbi/IBMtest2", "sbi/Snellen", "wallflower/WavingTrees"})
SLOW_ALGOS = frozenset({"svmd"})


def mask_hash(path: Path, algo: str, max_frames: int = MAX_FRAMES) -> tuple[str, int]:
    """SHA-256 of the default masks of ``algo`` on the first ``max_frames`` frames of ``path``, and their count."""
    import numpy as np

    import bgsub
    from bgsub.sources import open_source

    sub = bgsub.create(algo)
    digest = hashlib.sha256()
    n = 0
    with open_source(path, max_frames=max_frames) as source:
        for frame in source:
            mask = np.ascontiguousarray(sub.apply(frame.image))
            if mask.dtype != np.uint8 or mask.shape != frame.image.shape[:2]:
                raise AssertionError(f"{algo} on {path} frame {frame.index}: mask {mask.dtype} {mask.shape}")
            digest.update(mask.tobytes())
            n += 1
    return digest.hexdigest(), n


def _load() -> dict:
    return json.loads(FIXTURE.read_text())


def _check(name: str, path: Path, algo: str) -> None:
    want = _load()["sequences"][name][algo]
    got, n = mask_hash(path, algo)
    assert n == want["frames"], f"{algo} on {name}: {n} frames read, the fixture has {want['frames']}"
    assert got == want["sha256"], f"{algo}'s default masks on {name} changed (first {n} frames)"


def test_fixture_covers_every_algorithm_and_sequence():
    fx = _load()
    assert fx["max_frames"] == MAX_FRAMES
    assert set(fx["sequences"]) == {SAMPLE, *REAL}
    for name, algos in fx["sequences"].items():
        assert set(algos) == set(ALGOS), name
        for algo, rec in algos.items():
            assert len(rec["sha256"]) == 64 and 0 < rec["frames"] <= MAX_FRAMES, (name, algo)


@pytest.mark.parametrize("algo", ALGOS)
def test_sample_masks_unchanged(algo):
    from bgsub.sample import sample_sequence

    _check(SAMPLE, sample_sequence(), algo)


def _data_cases():
    return [pytest.param(n, a, id=f"{n}-{a}",
                         marks=[pytest.mark.data] + ([pytest.mark.slow] if n in SLOW or a in SLOW_ALGOS else []))
            for n in REAL for a in ALGOS]


@pytest.mark.parametrize("name, algo", _data_cases())
def test_real_sequence_masks_unchanged(shared_data, name, algo):
    path = shared_data / "bgs" / name
    if not path.is_dir():
        pytest.skip(f"{name} not found at {path}")
    _check(name, path, algo)


def _write(data_dir: Path) -> int:
    import time

    import bgsub
    from bgsub.cdnet import find_sequences
    from bgsub.sample import sample_sequence

    found = sorted(str(p.relative_to(data_dir / "bgs")) for p in find_sequences(data_dir / "bgs"))
    if found != sorted(REAL):
        print(f"the sequences under {data_dir / 'bgs'} are {found}, not REAL", file=sys.stderr)
        return 1
    rows: dict[str, dict] = {}
    names = [SAMPLE, *REAL]
    paths = {SAMPLE: sample_sequence()} | {n: data_dir / "bgs" / n for n in REAL}
    print(f"bgsub from {bgsub.__file__}", file=sys.stderr)
    for name in names:
        rows[name] = {}
        for algo in ALGOS:
            t0 = time.perf_counter()
            h, n = mask_hash(paths[name], algo)
            rows[name][algo] = {"sha256": h, "frames": n}
            print(f"{name:24s} {algo:6s} {n:4d} frames {time.perf_counter() - t0:6.1f} s {h[:12]}", file=sys.stderr)
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(_dump({"max_frames": MAX_FRAMES, "algos": list(ALGOS), "sequences": rows}))
    return 0


def _dump(fixture: dict) -> str:
    """The fixture as JSON, one line per sequence and subtractor."""
    lines = ["{", f' "max_frames": {json.dumps(fixture["max_frames"])},', f' "algos": {json.dumps(fixture["algos"])},',
             ' "sequences": {']
    names = list(fixture["sequences"])
    for i, name in enumerate(names):
        algos = fixture["sequences"][name]
        lines.append(f"  {json.dumps(name)}: {{")
        lines += [f"   {json.dumps(a)}: {json.dumps(rec)}" + ("," if j < len(algos) - 1 else "")
                  for j, (a, rec) in enumerate(algos.items())]
        lines.append("  }" + ("," if i < len(names) - 1 else ""))
    return "\n".join(lines + [" }", "}"]) + "\n"


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))  # the bgsub package, not the tests' folder of that name
    sys.path.append(str(root / "tests"))  # conftest
    from conftest import shared_data_dir

    if sys.argv[1:] != ["--write"]:
        print("usage: python tests/bgsub/test_mask_hashes.py --write", file=sys.stderr)
        sys.exit(2)
    sys.exit(_write(shared_data_dir()))
