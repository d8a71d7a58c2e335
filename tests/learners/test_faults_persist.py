"""An estimator's checkpoint is untrusted input: anyone can edit one and recompute its checksum.

Edited state -- a ring position past the expansion, shortened support vectors, NaN
coefficients, an infinite offset, scalars that would shadow methods, an entry far
larger than the model -- is refused with one clear line (a CheckpointError, a
ValueError), before any oversized entry is decompressed; and hypothesis mutates
valid checkpoints, each either refused or loaded into a state that is finite and
in range and runs.
"""

from __future__ import annotations

import json
import tempfile
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import learners
from learners import _stream
from learners._persist import CheckpointError, read_checkpoint
from tests._scripts import load_benchmark

fuzz = load_benchmark("checkpoint_fuzz")


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("persist") / "valid.npz"
    fuzz.make_model("OLKClassifier").save(path)
    return path


def _edited(valid: Path, tmp_path: Path, edit) -> Path:
    meta, arrays = read_checkpoint(valid)
    arrays = {k: v.copy() for k, v in arrays.items()}
    edit(meta, arrays)
    return fuzz.write_edited(tmp_path / "edited.npz", meta, arrays)


def test_the_valid_checkpoint_loads_and_predicts_the_same(valid):
    X, _ = fuzz.rows()
    est = learners.OLKClassifier.load(valid)
    np.testing.assert_array_equal(est.decision_function(X), fuzz.make_model("OLKClassifier").decision_function(X))


@pytest.mark.parametrize("ring", [(2**40, 3), (-1, 3), (0, 2**20), (0, -1), (3, 17), (16, 2)])
def test_a_ring_outside_the_expansion_is_refused(valid, tmp_path, ring):
    def edit(meta, arrays):
        arrays["_ring"][:] = ring

    with pytest.raises(CheckpointError, match=r"_ring.*out of range"):
        learners.OLKClassifier.load(_edited(valid, tmp_path, edit))


@pytest.mark.parametrize("name", ["_sv", "_coef"])
def test_shortened_support_vectors_or_coefficients_are_refused(valid, tmp_path, name):
    def edit(meta, arrays):
        arrays[name] = np.ascontiguousarray(arrays[name][:10])

    with pytest.raises(CheckpointError, match="slots|needs float64"):
        learners.OLKClassifier.load(_edited(valid, tmp_path, edit))


def test_scalars_never_become_arbitrary_attributes(valid, tmp_path):
    def predict(meta, arrays):
        meta["scalars"]["predict"] = 1

    with pytest.raises(CheckpointError, match="unknown state value 'predict'"):
        learners.OLKClassifier.load(_edited(valid, tmp_path, predict))

    def five(meta, arrays):
        meta["scalars"] = 5

    with pytest.raises(CheckpointError, match="scalars entry is 5, not a table"):
        learners.OLKClassifier.load(_edited(valid, tmp_path, five))

    def unknown_array(meta, arrays):
        arrays["fit"] = np.zeros(3)

    with pytest.raises(CheckpointError, match="'fit' is not a state array"):
        learners.OLKClassifier.load(_edited(valid, tmp_path, unknown_array))

    def unknown_meta(meta, arrays):
        meta["class"] = "x"

    with pytest.raises(CheckpointError, match="unknown entries 'class'"):
        learners.OLKClassifier.load(_edited(valid, tmp_path, unknown_meta))


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_finite_parameter_is_refused(valid, tmp_path, value):
    def edit(meta, arrays):
        meta["params"]["random_state"] = value

    with pytest.raises(CheckpointError, match="parameter random_state = .* is not a finite number"):
        learners.OLKClassifier.load(_edited(valid, tmp_path, edit))


@pytest.mark.parametrize("what", ["nan_coef", "nan_scale", "inf_offset_state", "inf_offset_value", "nan_width",
                                  "nan_calibrator", "huge_steps"])
def test_non_finite_state_is_refused(valid, tmp_path, what):
    def edit(meta, arrays):
        if what == "nan_coef":
            arrays["_coef"][2] = np.nan
        elif what == "nan_scale":
            arrays["_state"][_stream.SCALE] = np.nan
        elif what == "inf_offset_state":
            arrays["_state"][_stream.OFFSET] = np.inf
        elif what == "inf_offset_value":
            meta["scalars"]["offset_"] = float("inf")
        elif what == "nan_width":
            meta["scalars"]["width_"] = float("nan")
        elif what == "nan_calibrator":
            arrays["_calibrator"][0] = np.nan
        else:
            arrays["_state"][_stream.STEPS] = 1e300

    with pytest.raises(CheckpointError) as info:
        learners.OLKClassifier.load(_edited(valid, tmp_path, edit))
    assert "\n" not in str(info.value)


def write_bomb(valid: Path, path: Path, name: str, descr: str, shape: tuple) -> Path:
    """The checkpoint ``valid`` written to ``path`` with its entry ``name`` declared as ``shape`` of ``descr`` and
    holding that many zero bytes, deflated (256 MiB into about a megabyte)."""
    meta, arrays = read_checkpoint(valid)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for key, a in [("meta", np.array(json.dumps(meta))), ("checksum", np.array("0" * 64))] + \
                [("a." + k, v) for k, v in arrays.items() if k != name]:
            with zf.open(key + ".npy", "w") as fh:
                np.lib.format.write_array(fh, a)
        with zf.open(f"a.{name}.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": descr, "fortran_order": False, "shape": shape})
            zeros = bytes(1 << 22)
            for _ in range(np.dtype(descr).itemsize * int(np.prod(shape)) // len(zeros)):
                fh.write(zeros)
    assert path.stat().st_size < 4 << 20
    return path


def peak_memory(call) -> int:
    """The peak of Python's allocations while ``call()`` runs."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_entry_far_larger_than_the_model_is_refused_before_it_is_read(valid, tmp_path):
    # declared as the support vectors
    path = write_bomb(valid, tmp_path / "bomb.npz", "_sv", "<f8", (1 << 23, 4))

    def load():
        with pytest.raises(CheckpointError, match="slots, not the budget of 16|features"):
            learners.OLKClassifier.load(path)

    peak = peak_memory(load)
    assert peak < 16 << 20, peak


def test_a_header_that_lies_about_its_size_is_refused(valid, tmp_path):
    # the header of _coef declares 99 values; the entry holds its 16
    with zipfile.ZipFile(valid) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    assert b"(16,)" in entries["a._coef.npy"]
    entries["a._coef.npy"] = entries["a._coef.npy"].replace(b"(16,)", b"(99,)", 1)
    with zipfile.ZipFile(tmp_path / "lie.npz", "w") as zf:
        for n, b in entries.items():
            zf.writestr(n, b)
    with pytest.raises(CheckpointError, match=r"damaged: entry 'a._coef.npy' declares <f8\[99\]"):
        learners.OLKClassifier.load(tmp_path / "lie.npz")


def test_a_folder_given_as_the_checkpoint_says_so(tmp_path):
    with pytest.raises(CheckpointError, match="is a folder"):
        learners.OLKClassifier.load(tmp_path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(op=st.sampled_from(fuzz.OPS), pick=st.integers(0, 1 << 16), where=st.floats(0.0, 1.0),
       choice=st.integers(0, 1 << 16))
@example(op="shape", pick=29, where=0.0, choice=3131)  # classes_ cut to one class: loaded, learning raised
def test_mutated_checkpoints_are_refused_or_load_a_valid_state(valid, op, pick, where, choice):
    with tempfile.TemporaryDirectory() as tmp:
        outcome, detail = fuzz.try_case("OLKClassifier", valid, Path(tmp) / "m.npz", (op, pick, where, choice))
    assert outcome in ("refused", "loaded"), detail
