"""Fuzzing through the real CLI (in-process): readers, every parameter boundary, TOML configs.

Whatever the input, ``bgsub`` ends with exit 0, or with a nonzero exit and one
``bgsub CMD: error: ...`` line -- never a traceback -- and writes nothing
outside the output folder it was given.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import tempfile
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bgsub import registry
from bgsub.cli import main as cli

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run_cli(args: list[str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli(args)
            except SystemExit as exc:  # argparse usage errors
                rc = exc.code
    finally:
        os.chdir(old)
    return rc, out.getvalue(), err.getvalue()


def files_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


def assert_clean_outcome(rc: int, err: str, command: str) -> None:
    assert rc in (0, 1, 2), (rc, err)
    assert "Traceback" not in err, err
    if rc != 0:
        errors = [line for line in err.splitlines() if line.startswith(f"bgsub {command}: error:")
                  or line.startswith(f"usage: bgsub {command}")]
        assert errors, err
        # one line per error (eval reports each failed sequence, then a summary line)
        assert all(line.startswith((f"bgsub {command}: error:", f"usage: bgsub {command}", "  "))
                   or ": error:" not in line for line in err.splitlines()), err


def _png(image: np.ndarray) -> bytes:
    return cv2.imencode(".png", image)[1].tobytes()


def _jpg(image: np.ndarray) -> bytes:
    return cv2.imencode(".jpg", image)[1].tobytes()


def _frame(seed: int, size=(32, 24), channels: int = 3, dtype=np.uint8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    high = 65535 if dtype == np.uint16 else 255
    shape = (size[1], size[0]) if channels == 1 else (size[1], size[0], channels)
    return rng.integers(0, high, shape).astype(dtype)


#: (file name suffix, bytes) makers for one frame file of an image folder.
FILE_KINDS = {
    "colour": lambda s: (".png", _png(_frame(s))),
    "grey": lambda s: (".png", _png(_frame(s, channels=1))),
    "deep": lambda s: (".png", _png(_frame(s, dtype=np.uint16))),
    "bgra": lambda s: (".png", _png(_frame(s, channels=4))),
    "jpeg": lambda s: (".jpg", _jpg(_frame(s))),
    "jpeg_named_png": lambda s: (".png", _jpg(_frame(s))),
    "other_size": lambda s: (".png", _png(_frame(s, size=(20, 16)))),
    "truncated": lambda s: (".png", _png(_frame(s))[: 40 + s % 200]),
    "garbage": lambda s: (".png", np.random.default_rng(s).integers(0, 256, 300, dtype=np.uint8).tobytes()),
    "empty": lambda s: (".png", b""),
    "text_named_jpg": lambda s: (".jpg", b"not an image at all\n"),
    "ignored_txt": lambda s: (".txt", b"notes"),
}


@FUZZ
@given(kinds=st.lists(st.sampled_from(sorted(FILE_KINDS)), min_size=0, max_size=7), seed=st.integers(0, 1000))
def test_image_folders_of_any_content(kinds, seed):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src, out = tmp / "frames", tmp / "out"
        src.mkdir()
        for i, kind in enumerate(kinds, start=1):
            suffix, data = FILE_KINDS[kind](seed + i)
            (src / f"f{i:03d}{suffix}").write_bytes(data)
        before = files_under(tmp)
        rc, _, err = run_cli(["run", str(src), "--algo", "knn", "--out", str(out), "--quiet"], tmp)
        assert_clean_outcome(rc, err, "run")
        decodable = [k for k in kinds if k not in ("truncated", "garbage", "empty", "text_named_jpg",
                                                    "ignored_txt")]
        if decodable and len({k == "other_size" for k in decodable}) == 1:
            assert rc == 0, err  # one size: every decodable frame is processed
        new = files_under(tmp) - before
        assert all(p == "out" or p.startswith("out/") for p in new), new


def _cdnet(root: Path, n: int = 6) -> Path:
    (root / "input").mkdir(parents=True)
    (root / "groundtruth").mkdir()
    for i in range(1, n + 1):
        cv2.imwrite(str(root / "input" / f"in{i:06d}.jpg"), _frame(i, size=(32, 24)))
        gt = np.zeros((24, 32), np.uint8)
        gt[5:10, i:i + 6] = 255
        cv2.imwrite(str(root / "groundtruth" / f"gt{i:06d}.png"), gt)
    (root / "temporalROI.txt").write_text(f"2 {n}\n")
    cv2.imwrite(str(root / "ROI.bmp"), np.full((24, 32), 255, np.uint8))
    return root


ROI_KINDS = {
    "missing": None,
    "good": lambda: cv2.imencode(".bmp", np.full((24, 32), 255, np.uint8))[1].tobytes(),
    "wrong_size": lambda: cv2.imencode(".bmp", np.full((10, 12), 255, np.uint8))[1].tobytes(),
    "all_black": lambda: cv2.imencode(".bmp", np.zeros((24, 32), np.uint8))[1].tobytes(),
    "garbage": lambda: b"BM" + bytes(range(200)),
    "empty": lambda: b"",
}


@FUZZ
@given(temporal=st.one_of(st.none(), st.text(max_size=30),
                          st.tuples(st.integers(-5, 12), st.integers(-5, 12)).map(lambda t: f"{t[0]} {t[1]}\n")),
       roi=st.sampled_from(sorted(ROI_KINDS)), command=st.sampled_from(["run", "eval"]))
def test_cdnet_folders_with_missing_or_garbled_roi_files(temporal, roi, command):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        seq = _cdnet(tmp / "seq")
        if temporal is None:
            (seq / "temporalROI.txt").unlink()
        else:
            (seq / "temporalROI.txt").write_text(temporal, errors="replace")
        if ROI_KINDS[roi] is None:
            (seq / "ROI.bmp").unlink()
        else:
            (seq / "ROI.bmp").write_bytes(ROI_KINDS[roi]())
        out = tmp / "out"
        before = files_under(tmp)
        args = [command, str(seq), "--algo", "knn", "--out", str(out), "--quiet"]
        rc, _, err = run_cli(args, tmp)
        assert_clean_outcome(rc, err, command)
        new = files_under(tmp) - before
        assert all(p == "out" or p.startswith("out/") for p in new), new


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tiny") / "frames"
    d.mkdir()
    for i in range(1, 4):
        cv2.imwrite(str(d / f"f{i}.png"), _frame(i, size=(16, 12)))
    return d


def _boundary_values(spec: registry.ParamSpec) -> list[tuple[str, bool]]:
    """(text, valid) pairs at and around the accepted range of ``spec``."""
    if spec.type is bool:
        return [("true", True), ("off", True), ("maybe", False), ("", False)]
    if spec.type is str:
        return [(c, True) for c in spec.choices] + [("nonsense", False), ("", False)]
    values = []
    for bound in (spec.low, spec.high):
        if bound is None:
            continue
        step = 1 if spec.type is int else max(abs(bound) * 1e-6, 1e-9)
        values += [(repr(spec.type(bound)), True), (repr(spec.type(bound - step) if spec.low == bound else
                                                          spec.type(bound + step)), False)]
    values += [("nan", False), ("inf", False), ("-inf", False), ("abc", False), ("1e999", False)]
    if spec.type is int:
        values.append(("2.5", False))
    return values


CASES = [(algo, spec.name, text, valid) for algo in ("olkn", "norma", "knn", "mog2")
         for spec in registry.param_specs(algo) for text, valid in _boundary_values(spec)]


@pytest.mark.parametrize("algo,name,text,valid", CASES)
def test_every_parameter_boundary_through_set(tiny_folder, tmp_path, algo, name, text, valid):
    out = tmp_path / "out"
    rc, _, err = run_cli(["run", str(tiny_folder), "--algo", algo, "--set", f"{name}={text}", "--out", str(out),
                          "--max-frames", "2", "--quiet"], tmp_path)
    assert_clean_outcome(rc, err, "run")
    if not valid:
        assert rc == 2 and not out.exists(), err
    elif rc != 0:
        # a valid value can still clash with another parameter's default (C > nu, median odd, ...)
        assert rc == 2 and not out.exists() and name in err, err
    else:
        assert len(list(out.glob("bin*.png"))) == 2
    assert files_under(tmp_path) <= {"out"} | {f"out/bin00000{i}.png" for i in (1, 2)}


TOML_VALUES = st.recursive(
    st.one_of(st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True),
              st.text(max_size=8)),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(min_size=1, max_size=8), children,
                                                                       max_size=3),
    max_leaves=6)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').encode("unicode_escape").decode() + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f'"{k}" = {_toml_value(x)}' for k, x in v.items()) + "}"


@FUZZ
@given(algo=st.one_of(st.none(), st.sampled_from(["olkn", "norma", "knn", "mog2", "nope"]), st.integers()),
       table=st.sampled_from(["params", "olkn", "knn", "norma", "other"]),
       params=st.dictionaries(st.sampled_from(["width", "budget", "r", "nu", "C", "eta", "history", "median",
                                               "color", "seed", "detectShadows", "junk"]), TOML_VALUES, max_size=4),
       garbage=st.one_of(st.none(), st.text(max_size=40)))
def test_toml_configs(tiny_folder, algo, table, params, garbage):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cfg = tmp / "cfg.toml"
        if garbage is not None:
            cfg.write_text(garbage, errors="replace")
        else:
            lines = [] if algo is None else [f"algo = {_toml_value(algo)}"]
            lines.append(f"[{table}]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in params.items()]
            cfg.write_text("\n".join(lines) + "\n")
        out = tmp / "out"
        before = files_under(tmp)
        rc, _, err = run_cli(["run", str(tiny_folder), "--config", str(cfg), "--out", str(out), "--max-frames", "1",
                              "--quiet"], tmp)
        assert_clean_outcome(rc, err, "run")
        new = files_under(tmp) - before
        assert all(p == "out" or p.startswith("out/") for p in new), new
        if rc != 0:
            assert not out.exists()


@pytest.fixture(scope="module")
def good_video(tmp_path_factory) -> bytes:
    from tests.bgsub.test_sources import write_test_video

    return write_test_video(tmp_path_factory.mktemp("vid") / "v.avi", frames=12).read_bytes()


@FUZZ
@given(keep=st.floats(0.0, 1.0), flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=20),
       suffix=st.sampled_from([".avi", ".mp4", ".mkv", ".png"]))
def test_truncated_and_corrupt_videos(good_video, keep, flips, suffix):
    data = bytearray(good_video[: int(len(good_video) * keep)])
    for where, value in flips:
        if data:
            data[min(int(where * len(data)), len(data) - 1)] = value
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = tmp / f"clip{suffix}"
        src.write_bytes(bytes(data))
        before = files_under(tmp)
        rc, _, err = run_cli(["run", str(src), "--algo", "knn", "--out", str(tmp / "out"), "--quiet"], tmp)
        assert_clean_outcome(rc, err, "run")
        new = files_under(tmp) - before
        assert all(p == "out" or p.startswith("out/") for p in new), new
