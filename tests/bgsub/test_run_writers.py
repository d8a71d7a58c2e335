"""The atomic writers under ``run`` and ``batch``: nothing half-written, ever."""

from __future__ import annotations

import json
import math
import zlib

import cv2
import numpy as np
import pytest

from bgsub.writers import (
    AtomicDir,
    Manifest,
    MaskVideoWriter,
    MaskWriter,
    list_masks,
    remove_partials,
    write_json_atomic,
)


def test_mask_writer_numbers_like_cdnet_and_accepts_bool(tmp_path):
    w = MaskWriter(tmp_path / "m")
    w.write(1, np.zeros((4, 5), np.uint8))
    w.write(12, np.ones((4, 5), bool))
    assert list(list_masks(tmp_path / "m")) == [1, 12]
    m = cv2.imread(str(tmp_path / "m" / "bin000012.png"), cv2.IMREAD_UNCHANGED)
    assert m.dtype == np.uint8 and m.shape == (4, 5) and np.all(m == 255)
    assert w.count == 2 and w.last_index == 12
    with pytest.raises(ValueError, match=r"\(H, W\)"):
        w.write(2, np.zeros((4, 5, 3), np.uint8))
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["bin000001.png", "bin000012.png"]


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (24, 32), (121, 163)])
def test_masks_read_back_as_written_8_bit_greyscale_pngs(tmp_path, shape):
    # every mask pixel value (not only 0/255) survives the fast encoding, read back by OpenCV and by a plain
    # zlib decode of the PNG's data (8-bit greyscale, no row filter needed to read it)
    rng = np.random.default_rng(sum(shape))
    w = MaskWriter(tmp_path)
    masks = [np.zeros(shape, np.uint8), np.full(shape, 255, np.uint8),
             np.where(rng.random(shape) < 0.3, 255, 0).astype(np.uint8),
             rng.integers(0, 256, shape, dtype=np.uint8)]
    for n, mask in enumerate(masks, 1):
        path = w.write(n, mask)
        assert np.array_equal(cv2.imread(str(path), cv2.IMREAD_UNCHANGED), mask)
        data = path.read_bytes()
        chunks, pos = {}, 8
        while pos < len(data):
            size = int.from_bytes(data[pos:pos + 4], "big")
            chunks[data[pos + 4:pos + 8]] = chunks.get(data[pos + 4:pos + 8], b"") + data[pos + 8:pos + 8 + size]
            pos += 12 + size
        assert chunks[b"IHDR"][8:10] == bytes([8, 0])  # bit depth 8, greyscale
        rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(shape[0], shape[1] + 1)
        assert np.array_equal(_unfiltered(rows), mask)


def _unfiltered(rows):
    """The pixels of PNG rows (a filter byte, then the row) of 8-bit greyscale, filters None/Sub/Up undone."""
    out = np.zeros((rows.shape[0], rows.shape[1] - 1), np.uint8)
    for i, row in enumerate(rows):
        kind, line = row[0], row[1:].astype(np.int64)
        above = out[i - 1].astype(np.int64) if i else np.zeros_like(line)
        if kind == 1:
            line = np.cumsum(line) % 256
        elif kind == 2:
            line = (line + above) % 256
        else:
            assert kind == 0, f"row filter {kind}"
        out[i] = line
    return out


def test_json_is_atomic_and_has_no_nan(tmp_path):
    p = tmp_path / "x.json"
    write_json_atomic(p, {"F": math.nan, "n": np.int64(3), "v": np.float32(0.5), "a": np.arange(2)})
    assert json.loads(p.read_text()) == {"F": None, "n": 3, "v": 0.5, "a": [0, 1]}
    with pytest.raises(TypeError):
        write_json_atomic(p, {"bad": object()})
    # The failed write left the old file intact and no temporary file.
    assert json.loads(p.read_text())["n"] == 3
    assert [q.name for q in tmp_path.iterdir()] == ["x.json"]


def test_atomic_dir_commits_or_leaves_nothing(tmp_path):
    final = tmp_path / "result"
    with pytest.raises(RuntimeError):
        with AtomicDir(final) as tmp:
            (tmp / "a.txt").write_text("half")
            raise RuntimeError("killed half-way")
    assert list(tmp_path.iterdir()) == []
    with AtomicDir(final) as tmp:
        assert tmp.name.startswith(".result.partial-")
        (tmp / "a.txt").write_text("whole")
    assert (final / "a.txt").read_text() == "whole"
    # Replacing an earlier result.
    with AtomicDir(final) as tmp:
        (tmp / "b.txt").write_text("new")
    assert sorted(p.name for p in final.iterdir()) == ["b.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["result"]


def test_mask_video_appears_only_when_closed(tmp_path):
    path = tmp_path / "m.avi"
    w = MaskVideoWriter(path, 10)
    for i in range(5):
        w.write(np.full((16, 16), 255 * (i % 2), np.uint8))
    assert not path.exists()  # still under its temporary name
    assert w.close() == path and path.exists()
    cap = cv2.VideoCapture(str(path))
    n = 0
    while cap.read()[0]:
        n += 1
    assert n == 5
    w2 = MaskVideoWriter(tmp_path / "gone.mkv", 10)
    w2.write(np.zeros((16, 16), np.uint8))
    w2.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.avi"]
    with pytest.raises(ValueError, match=".mp4, .avi or .mkv"):
        MaskVideoWriter(tmp_path / "m.xyz")
    w3 = MaskVideoWriter(tmp_path / "s.mkv")
    w3.write(np.zeros((8, 8), np.uint8))
    with pytest.raises(ValueError, match="8x8"):
        w3.write(np.zeros((9, 8), np.uint8))
    w3.abort()


def test_remove_partials_touches_only_temporary_names(tmp_path):
    (tmp_path / ".clip.partial-1-ab").mkdir()
    (tmp_path / ".other.partial-2-cd").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "clip").mkdir()
    assert remove_partials(tmp_path, "clip") == 1
    assert remove_partials(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [".hidden", "clip"]


def test_manifest_round_trip_and_foreign_files(tmp_path):
    m = Manifest.load(tmp_path / "manifest.json")
    m.items["a.mp4"] = {"status": "done", "frames": 3}
    m.items["b.mp4"] = {"status": "failed"}
    m.save()
    again = Manifest.load(tmp_path / "manifest.json")
    assert again.items == m.items and again.counts() == {"done": 1, "failed": 1}
    (tmp_path / "other.json").write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not a bgsub batch manifest"):
        Manifest.load(tmp_path / "other.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="not a readable batch manifest"):
        Manifest.load(tmp_path / "broken.json")
