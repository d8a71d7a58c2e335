"""A subtractor's checkpoint and a run's config are untrusted input.

Anyone can edit a checkpoint and recompute its checksum: a ring position or count
past the budget (which the frame kernels would follow without bounds checks), NaN
coefficients, an infinite offset, a NaN scale, unknown arrays or state values, a
meta entry of the wrong type, a frame size larger than memory, an entry far
larger than the model -- each is refused with one clear line (CheckpointError, a
ValueError; ``bgsub run --resume``: ``bgsub run: error: ...``, exit 2), before any
oversized entry is decompressed. Hypothesis mutates valid checkpoints of every
subtractor: each is refused, or loads into a state that is finite and in range and
runs. TOML configs with infinite or huge numbers, in another encoding, or a folder
given as the config, get a message naming the file.
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import bgsub
from bgsub.checkpoint import CheckpointError
from learners._persist import read_checkpoint
from tests.bgsub.test_fuzz import assert_clean_outcome, run_cli
from tests._scripts import load_benchmark
from tests.learners.test_faults_persist import peak_memory, write_bomb

ALGOS = ("olkn", "norma", "svmd", "oem")
fuzz = load_benchmark("checkpoint_fuzz")


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("checkpoints")
    return {algo: fuzz.make_model(algo).save(folder / f"{algo}.npz") for algo in ALGOS}


def _edited(valid: Path, tmp_path: Path, edit) -> Path:
    meta, arrays = read_checkpoint(valid)
    arrays = {k: v.copy() for k, v in arrays.items()}
    edit(meta, arrays)
    return fuzz.write_edited(tmp_path / "edited.npz", meta, arrays)


def _refused(path: Path, match: str) -> str:
    with pytest.raises(CheckpointError, match=match) as info:
        bgsub.load(path)
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.mark.parametrize("algo", ALGOS)
def test_valid_checkpoints_continue_exactly(valid, algo):
    whole = fuzz.make_model(algo)
    expected = fuzz.run_model(algo, whole)
    assert fuzz.run_model(algo, bgsub.load(valid[algo])) == expected


@pytest.mark.parametrize("algo", ["olkn", "norma", "svmd"])
@pytest.mark.parametrize("start,count", [(2**40, 3), (-1, 3), (0, 2**20), (0, -5), (6, 6), (0, 7)])
def test_a_ring_outside_the_budget_is_refused(valid, tmp_path, algo, start, count):
    def edit(meta, arrays):
        arrays["ring_"][5, 7] = (start, count)

    _refused(_edited(valid[algo], tmp_path, edit), r"state 'ring_' holds positions .* with a budget of 6")


@pytest.mark.parametrize("algo,name,value", [
    ("olkn", "coef_", np.nan), ("norma", "coef_", np.inf), ("olkn", "rho_", np.inf), ("norma", "rho_", -np.inf),
    ("olkn", "blink_", np.nan), ("olkn", "blink_", 2.0),
    ("svmd", "alpha_", np.nan), ("svmd", "state_", np.inf), ("svmd", "offset_", np.nan),
    ("oem", "s0_", np.nan), ("oem", "s1_", -1.0), ("oem", "s2_", np.inf)])
def test_non_finite_or_out_of_range_arrays_are_refused(valid, tmp_path, algo, name, value):
    def edit(meta, arrays):
        arrays[name].reshape(-1)[3] = value

    _refused(_edited(valid[algo], tmp_path, edit), f"state '{name}' holds")


@pytest.mark.parametrize("algo,name,value,match", [
    ("olkn", "scale_", float("nan"), "scale_ = nan is not a finite number"),
    ("norma", "scale_", 0.0, "scale_ = 0.0 is out of range"),
    ("olkn", "gain_", float("inf"), "not a finite number"),
    ("olkn", "n_frames_", 2**63, r"n_frames_ = .* is not a whole number"),
    ("svmd", "n_frames_", -1, "n_frames_ = -1 is not a whole number"),
    ("olkn", "relearn_left_", 2**20, "relearn_left_ = 1048576 belongs to a feature that was removed"),
    ("oem", "n_updates_", 10**6, "n_updates_ = 1000000 is more than n_frames_"),
    ("olkn", "n_steps_", "x", "n_steps_ = 'x' is not a whole number"),
    ("norma", "blobs_", 1e400, "not a finite number")])
def test_bad_state_values_are_refused(valid, tmp_path, algo, name, value, match):
    def edit(meta, arrays):
        meta["scalars"][name] = value

    _refused(_edited(valid[algo], tmp_path, edit), match)


def test_scalars_never_become_arbitrary_attributes(valid, tmp_path):
    def predict(meta, arrays):
        meta["scalars"]["apply"] = 1

    _refused(_edited(valid["olkn"], tmp_path, predict), "unknown state values 'apply'")

    def five(meta, arrays):
        meta["scalars"] = 5

    _refused(_edited(valid["norma"], tmp_path, five), "its scalars entry is 5, not a table")

    def unknown_array(meta, arrays):
        arrays["apply"] = np.zeros((12, 16), np.uint8)

    _refused(_edited(valid["olkn"], tmp_path, unknown_array), "'apply' is not a state array of olkn")

    def unknown_meta(meta, arrays):
        meta["extra"] = {}

    _refused(_edited(valid["svmd"], tmp_path, unknown_meta), "unknown entries 'extra' in its meta")


def test_meta_entries_of_the_wrong_type_are_refused(valid, tmp_path):
    for key, value, match in [("params", 5, "parameters are int"), ("frame_shape", [12.5, 16], "not valid"),
                              ("channels", 2, "2 channel"), ("state_layout", "x", "state layout 'x'"),
                              ("random_state", [], "random_state entry")]:
        def edit(meta, arrays, key=key, value=value):
            meta[key] = value

        _refused(_edited(valid["olkn"], tmp_path, edit), match)


def test_a_frame_size_beyond_memory_is_a_clear_error_not_a_memory_error(valid, tmp_path):
    def edit(meta, arrays):
        meta["frame_shape"] = [100000, 100000]

    _refused(_edited(valid["olkn"], tmp_path, edit), "sides 1 to 65536")

    def edit2(meta, arrays):
        meta["frame_shape"] = [60000, 60000]

    _refused(_edited(valid["svmd"], tmp_path, edit2), r"a svmd model of 60000x60000 pixels needs .* GiB of memory")


def test_an_entry_far_larger_than_the_model_is_refused_before_it_is_read(valid, tmp_path):
    # declared as olkn's coefficients
    path = write_bomb(valid["olkn"], tmp_path / "bomb.npz", "coef_", "<f4", (1 << 26,))
    peak = peak_memory(lambda: _refused(
        path, r"state 'coef_' is float32\[67108864\], but olkn .* at 16x12x3 needs float32\[12, 16, 6\]"))
    assert peak < 16 << 20, peak


def test_entries_that_are_not_the_formats_are_refused(valid, tmp_path):
    with zipfile.ZipFile(valid["oem"]) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    with zipfile.ZipFile(tmp_path / "extra.npz", "w") as zf:
        for n, b in entries.items():
            zf.writestr(n, b)
        zf.writestr("payload.pkl", b"\x80\x04N.")
    _refused(tmp_path / "extra.npz", "holds the entry 'payload.pkl'")
    _refused(tmp_path, "is a folder")


@pytest.fixture(scope="module")
def tiny_video_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("frames")
    for i, f in enumerate(fuzz.frames(3)):
        cv2.imwrite(str(folder / f"in{i:06d}.png"), f)
    return folder


@pytest.mark.parametrize("edit_name", ["ring", "nan_coef", "scalars_5", "huge_frame"])
def test_bgsub_run_resume_reports_a_bad_checkpoint_in_one_line(valid, tmp_path, tiny_video_folder, edit_name):
    def edit(meta, arrays):
        if edit_name == "ring":
            arrays["ring_"][0, 0, 0] = 2**40
        elif edit_name == "nan_coef":
            arrays["coef_"][0, 0, 0] = np.nan
        elif edit_name == "scalars_5":
            meta["scalars"] = 5
        else:
            meta["frame_shape"] = [100000, 100000]

    ck = _edited(valid["olkn"], tmp_path, edit)
    rc, _, err = run_cli(["run", str(tiny_video_folder), "--resume", str(ck), "--out", str(tmp_path / "out"),
                          "--quiet"], tmp_path)
    assert_clean_outcome(rc, err, "run")
    assert rc == 2 and err.startswith(f"bgsub run: error: {ck}"), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text,match", [
    ('algo = "knn"\n[knn]\nhistory = 1e400\n', "history must be finite, got inf"),
    ('algo = "knn"\n[knn]\nhistory = inf\n', "history must be finite, got inf"),
    ("[params]\nbudget = inf\n", "budget must be finite, got inf"),
    ("[params]\nbudget = 9223372036854775807\n", "budget must be <= 255, got 9223372036854775807"),
    ("[params]\nwidth = -inf\n", "width must be finite"),
    ("[params]\nbudget = 1e20\n", "budget must be <= 255"),
])
def test_toml_numbers_beyond_range_get_range_messages(tmp_path, tiny_video_folder, text, match):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(text)
    rc, _, err = run_cli(["run", str(tiny_video_folder), "--config", str(cfg), "--out", str(tmp_path / "out"),
                          "--quiet"], tmp_path)
    assert_clean_outcome(rc, err, "run")
    assert rc == 2 and match in err and str(cfg) in err, err


def test_a_config_in_another_encoding_or_a_folder_is_named(tmp_path, tiny_video_folder):
    cfg = tmp_path / "latin1.toml"
    cfg.write_bytes('# réglages\n[params]\nbudget = 10\n'.encode("latin-1"))
    rc, _, err = run_cli(["run", str(tiny_video_folder), "--config", str(cfg), "--out", str(tmp_path / "out"),
                          "--quiet"], tmp_path)
    assert rc == 2 and f"{cfg} is not valid TOML: it is not UTF-8 text" in err, err
    folder = tmp_path / "conf.d"
    folder.mkdir()
    rc, _, err = run_cli(["run", str(tiny_video_folder), "--config", str(folder), "--out", str(tmp_path / "out"),
                          "--quiet"], tmp_path)
    assert rc == 2 and f"config file {folder} is a folder" in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("algo", ALGOS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=st.sampled_from(fuzz.OPS), pick=st.integers(0, 1 << 16), where=st.floats(0.0, 1.0),
       choice=st.integers(0, 1 << 16))
def test_mutated_checkpoints_are_refused_or_load_a_valid_state(valid, algo, op, pick, where, choice):
    with tempfile.TemporaryDirectory() as tmp:
        outcome, detail = fuzz.try_case(algo, valid[algo], Path(tmp) / "m.npz", (op, pick, where, choice))
    assert outcome in ("refused", "loaded"), detail


def test_a_header_that_does_not_parse_is_refused(valid, tmp_path):
    """An entry's .npy header without its closing brace, in an otherwise intact zip (its CRCs recomputed):
    numpy's header parser raises a tokenizer error, which must reach the user as a checkpoint error."""
    path = tmp_path / "unbalanced.npz"
    with zipfile.ZipFile(valid["olkn"]) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "a.samples_.npy":
                data = data.replace(b"}", b" ", 1)
            dst.writestr(info, data)
    with pytest.raises(CheckpointError, match=r"damaged: the header of entry 'a.samples_.npy' does not parse"):
        bgsub.load(path)
