"""``bgsub run``, ``demo`` and ``eval --out`` never lose a user's data, and say clearly what is wrong.

Outputs onto, around or inside an input are refused before a frame is read;
replacing an earlier run's masks deletes only masks bgsub wrote; a resumed run
keeps what was written and continues the numbering; frame numbers keep the gaps
of frames that did not decode; an output that cannot be written, a ``--start``
past the end and a checkpoint that saw the whole source are clear errors before
the work. Every test here failed before these guarantees were made.

Root can write into any folder whatever its mode, so a "read-only folder" here
is one made immutable with ``chattr +i`` when running as root (skipped where
that is not possible) and a ``chmod 555`` folder otherwise; the same checks are
also made, everywhere, with a path whose "folder" is a regular file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from bgsub.cli import main as cli
from bgsub.synthetic import SceneConfig, SyntheticScene, write_sequence
from tests.bgsub.test_sources import write_test_video
from bgsub.writers import MaskWriter, list_masks

SIZE = (64, 48)
FRAMES = 20


def write_clip(path: Path, frames: int = FRAMES) -> Path:
    """A small MJPG AVI of the synthetic street scene."""
    return write_test_video(path, frames, SIZE, "MJPG", 4, objects=2, first_object=2, warmup=4)


def frame_chunks(data: bytes) -> list[tuple[int, int]]:
    """``(offset, size)`` of each video frame's data chunk (``00dc``) in an AVI's ``movi`` list, in order."""
    chunks = []
    i = data.find(b"movi") + 4
    while True:
        i = data.find(b"00dc", i)
        if i < 0 or len(chunks) == FRAMES:
            return chunks
        size = int.from_bytes(data[i + 4:i + 8], "little")
        chunks.append((i + 8, size))
        i += 8 + size + (size & 1)


def drop_frames(src: Path, dst: Path, frames=(11, 12)) -> Path:
    """``src`` with the given frames' data chunks emptied (size 0), as a damaged file has them.

    FFmpeg reads an empty chunk as a dropped frame: the read does not fail, the
    next frame comes instead, and only its time stamp shows that frames are missing.
    """
    data = bytearray(src.read_bytes())
    for n in sorted(frames, reverse=True):
        offset, size = frame_chunks(bytes(data))[n - 1]
        padded = size + (size & 1)
        data[offset - 4:offset] = (0).to_bytes(4, "little")
        # keep every later offset where the index says it is: the frame's bytes become a JUNK chunk
        junk = b"JUNK" + (padded - 8).to_bytes(4, "little") if padded >= 8 else b""
        data[offset:offset + padded] = junk + bytes(padded - len(junk))
    dst.write_bytes(bytes(data))
    return dst


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    return write_clip(tmp_path_factory.mktemp("faults") / "clip.avi")


@pytest.fixture()
def own_clip(tmp_path, clip) -> Path:
    """A copy of the clip in this test's folder, so that no test can damage another's input."""
    return Path(shutil.copy(clip, tmp_path / "clip.avi"))


@pytest.fixture()
def afile(tmp_path) -> Path:
    """A regular file, used where a folder is expected (no one can create anything under it)."""
    p = tmp_path / "afile"
    p.write_text("not a folder\n")
    return p


@pytest.fixture()
def readonly_dir(tmp_path):
    """A folder this process cannot create files in, or a skip where none can be made."""
    d = tmp_path / "readonly"
    d.mkdir()
    if os.geteuid() != 0:
        d.chmod(0o555)
        undo = ["chmod", "755", str(d)]
    else:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode:
            pytest.skip("running as root without chattr +i: root can write into any folder")
        undo = ["chattr", "-i", str(d)]
    try:
        try:
            (d / "probe").write_text("x")
        except OSError:
            pass
        else:
            pytest.skip("could not make a folder this process cannot write into")
        yield d
    finally:
        subprocess.run(undo, check=False)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def error_line(capsys, command: str = "run") -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith(f"bgsub {command}: error: ")]
    assert lines, err
    assert "Traceback" not in err
    return lines[-1]


# ---------------------------------------------------------------- outputs onto inputs


@pytest.mark.parametrize("option,algo", [("--mask-video", "knn"), ("--overlay", "knn"), ("--checkpoint", "olkn")])
def test_an_output_over_the_input_video_is_refused(own_clip, option, algo, capsys):
    before = own_clip.read_bytes()
    assert cli(["run", str(own_clip), "--algo", algo, option, str(own_clip), "--quiet"]) == 2
    assert own_clip.read_bytes() == before
    assert f"{option} {own_clip} is the input file" in error_line(capsys)


def test_an_output_reaching_the_input_through_a_link_is_refused(tmp_path, own_clip, capsys):
    before = own_clip.read_bytes()
    (tmp_path / "link.avi").symlink_to(own_clip)
    os.link(own_clip, tmp_path / "hard.avi")
    for name in ("link.avi", "hard.avi"):
        assert cli(["run", str(own_clip), "--algo", "knn", "--mask-video", str(tmp_path / name), "--quiet"]) == 2
        assert "is the input file" in error_line(capsys)
    assert own_clip.read_bytes() == before


def _frames_named_like_masks(folder: Path, n: int = 6) -> Path:
    folder.mkdir()
    scene = SyntheticScene(SceneConfig(width=SIZE[0], height=SIZE[1], frames=n, seed=2, warmup=2))
    for t in range(1, n + 1):
        cv2.imwrite(str(folder / f"bin{t:06d}.png"), scene.render(t)[0])
    return folder


def test_masks_into_the_input_folder_are_refused_and_delete_nothing(tmp_path, capsys):
    frames = _frames_named_like_masks(tmp_path / "frames")
    before = snapshot(frames)
    (tmp_path / "linked").symlink_to(frames)
    for out in (frames, tmp_path / "linked", frames / "masks", tmp_path):
        assert cli(["run", str(frames), "--algo", "knn", "--out", str(out), "--quiet"]) == 2
        line = error_line(capsys)
        assert "input folder" in line and ("is the" in line or "inside" in line or "contains" in line)
        assert snapshot(frames) == before
    assert not (frames / "masks").exists()


def test_two_outputs_naming_one_file_are_refused(tmp_path, clip, capsys):
    video = tmp_path / "out.avi"
    assert cli(["run", str(clip), "--algo", "knn", "--mask-video", str(video), "--overlay", str(video),
                "--quiet"]) == 2
    assert "name the same place" in error_line(capsys)
    assert not video.exists()


def test_masks_bgsub_did_not_write_are_never_deleted(tmp_path, clip, capsys):
    out = tmp_path / "masks"
    out.mkdir()
    theirs = {n: np.full((SIZE[1], SIZE[0]), n, np.uint8) for n in (1, 3, 99)}
    for n, m in theirs.items():
        cv2.imwrite(str(out / f"bin{n:06d}.png"), m)
    before = snapshot(out)
    assert cli(["run", str(clip), "--algo", "knn", "--out", str(out), "--quiet"]) == 2
    assert "that bgsub did not write" in error_line(capsys)
    assert snapshot(out) == before


def test_only_the_masks_of_an_earlier_run_are_replaced(tmp_path, clip, capsys):
    out = tmp_path / "masks"
    earlier = MaskWriter(out)
    for n in (1, 7, 99):  # an earlier, longer run's masks
        earlier.write(n, np.zeros((SIZE[1], SIZE[0]), np.uint8))
    (out / "notes.txt").write_text("mine\n")
    (out / ".notes.partial-1-abcdef.txt").write_text("another program's file being written\n")
    assert cli(["run", str(clip), "--algo", "knn", "--out", str(out), "--quiet", "--max-frames", "5"]) == 0
    assert list(list_masks(out)) == [1, 2, 3, 4, 5]
    assert (out / "notes.txt").read_text() == "mine\n"
    assert (out / ".notes.partial-1-abcdef.txt").exists()
    assert "removed 3 masks of an earlier run" in capsys.readouterr().err


# ---------------------------------------------------------------- resume


def _masks(folder: Path) -> dict[int, bytes]:
    return {n: p.read_bytes() for n, p in list_masks(folder).items()}


def test_resume_keeps_the_masks_written_and_continues_their_numbers(tmp_path, clip, capsys):
    full, out, ck = tmp_path / "full", tmp_path / "masks", tmp_path / "ck.npz"
    assert cli(["run", str(clip), "--algo", "olkn", "--out", str(full), "--quiet"]) == 0
    assert cli(["run", str(clip), "--algo", "olkn", "--out", str(out), "--quiet", "--max-frames", "8",
                "--checkpoint", str(ck), "--checkpoint-every", "4"]) == 0
    first = {n: (p.stat().st_ino, p.read_bytes()) for n, p in list_masks(out).items()}
    assert list(first) == list(range(1, 9))
    capsys.readouterr()
    assert cli(["run", str(clip), "--resume", str(ck), "--checkpoint", str(ck), "--out", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "removed" not in err
    after = list_masks(out)
    assert list(after) == list(range(1, FRAMES + 1))
    assert {n: (after[n].stat().st_ino, after[n].read_bytes()) for n in first} == first  # not even rewritten
    assert _masks(out) == _masks(full)  # as one uninterrupted run


def test_a_frame_lost_without_a_failed_read_keeps_its_number(tmp_path, clip, capsys):
    gaps = drop_frames(clip, tmp_path / "gaps.avi")
    out = tmp_path / "masks"
    assert cli(["run", str(gaps), "--algo", "knn", "--out", str(out), "--quiet"]) == 0
    assert list(list_masks(out)) == [*range(1, 11), *range(13, FRAMES + 1)]
    assert "2 could not be decoded" in capsys.readouterr().err


def test_resume_after_lost_frames_continues_at_the_right_frame(tmp_path, clip):
    gaps = drop_frames(clip, tmp_path / "gaps.avi")
    full, out, ck = tmp_path / "full", tmp_path / "masks", tmp_path / "ck.npz"
    assert cli(["run", str(gaps), "--algo", "olkn", "--out", str(full), "--quiet"]) == 0
    assert cli(["run", str(gaps), "--algo", "olkn", "--out", str(out), "--quiet", "--max-frames", "12",
                "--checkpoint", str(ck)]) == 0
    assert list(list_masks(out)) == [*range(1, 11), 13, 14]
    assert cli(["run", str(gaps), "--resume", str(ck), "--out", str(out), "--quiet"]) == 0
    assert _masks(out) == _masks(full)


def test_resume_past_the_end_is_an_error_and_keeps_the_masks(tmp_path, clip, capsys):
    out, ck = tmp_path / "masks", tmp_path / "ck.npz"
    assert cli(["run", str(clip), "--algo", "olkn", "--out", str(out), "--quiet", "--checkpoint", str(ck)]) == 0
    before = snapshot(out)
    capsys.readouterr()
    assert cli(["run", str(clip), "--resume", str(ck), "--out", str(out), "--quiet"]) == 2
    line = error_line(capsys)
    assert f"--resume {ck}" in line and f"already processed {FRAMES} frames" in line and "nothing is left" in line
    assert snapshot(out) == before


@pytest.mark.parametrize("kind", ["video", "images"])
def test_start_past_the_end_is_an_error(tmp_path, clip, kind, capsys):
    source = clip if kind == "video" else _frames_named_like_masks(tmp_path / "frames")
    out = tmp_path / "masks"
    assert cli(["run", str(source), "--algo", "knn", "--out", str(out), "--start", "999", "--quiet"]) == 2
    line = error_line(capsys)
    assert "--start 999" in line and "give a smaller --start" in line
    assert not out.exists()


# ---------------------------------------------------------------- outputs that cannot be written


@pytest.mark.parametrize("option,name", [("--mask-video", "m.mkv"), ("--overlay", "o.avi"),
                                         ("--objects", "x.jsonl"), ("--checkpoint", "ck.npz"),
                                         ("--out", "masks")])
def test_an_output_under_a_file_is_refused_before_the_first_frame(tmp_path, clip, afile, option, name, capsys):
    masks = tmp_path / "masks_elsewhere"
    extra = [] if option == "--out" else ["--out", str(masks)]
    assert cli(["run", str(clip), "--algo", "olkn", option, str(afile / name), *extra, "--quiet"]) == 2
    line = error_line(capsys)
    assert f"{afile} is a file, not a folder" in line
    assert "OpenCV" not in line and "File exists" not in line
    assert not masks.exists()  # refused before any frame was processed
    assert afile.read_text() == "not a folder\n"


@pytest.mark.parametrize("option,name", [("--mask-video", "m.mkv"), ("--objects", "x.csv"),
                                         ("--checkpoint", "ck.npz"), ("--out", "masks")])
def test_an_output_in_a_read_only_folder_is_refused_before_the_first_frame(tmp_path, clip, readonly_dir, option,
                                                                           name, capsys):
    masks = tmp_path / "masks_elsewhere"
    extra = [] if option == "--out" else ["--out", str(masks)]
    assert cli(["run", str(clip), "--algo", "olkn", option, str(readonly_dir / name), *extra, "--quiet"]) == 2
    line = error_line(capsys)
    assert f"the folder {readonly_dir} is not writable" in line and "OpenCV" not in line
    assert not masks.exists()
    assert list(readonly_dir.iterdir()) == []


# ---------------------------------------------------------------- demo and eval


@pytest.fixture()
def small_sample(tmp_path, monkeypatch) -> Path:
    """The demo's sample replaced by a small CDnet sequence of this test's own."""
    cfg = SceneConfig(width=SIZE[0], height=SIZE[1], frames=12, seed=6, objects=1, first_object=2, warmup=4)
    seq = write_sequence(SyntheticScene(cfg), tmp_path / "sample")
    monkeypatch.setattr("bgsub.sample.sample_sequence", lambda: seq)
    return seq


def test_demo_picture_that_cannot_be_written_fails_before_the_clip(tmp_path, afile, small_sample, capsys):
    out = tmp_path / "m"
    assert cli(["demo", "--no-gui", "--algo", "knn", "--quiet", "--out", str(out), "--picture", str(afile / "p.png"),
                "--picture-frame", "5"]) == 2
    assert f"--picture {afile / 'p.png'}: {afile} is a file, not a folder" in error_line(capsys, "demo")
    assert not out.exists()


def test_demo_picture_in_a_read_only_folder_fails_before_the_clip(tmp_path, readonly_dir, small_sample, capsys):
    out = tmp_path / "m"
    assert cli(["demo", "--no-gui", "--algo", "knn", "--quiet", "--out", str(out),
                "--picture", str(readonly_dir / "p.png"), "--picture-frame", "5"]) == 2
    assert "is not writable" in error_line(capsys, "demo")
    assert not out.exists()


def test_demo_masks_inside_the_sample_are_refused(small_sample, capsys):
    before = snapshot(small_sample)
    assert cli(["demo", "--no-gui", "--algo", "knn", "--quiet", "--out", str(small_sample / "masks")]) == 2
    assert "lies inside the sample folder" in error_line(capsys, "demo")
    assert snapshot(small_sample) == before


def test_eval_out_onto_or_inside_a_sequence_is_refused(tmp_path, capsys):
    cfg = SceneConfig(width=SIZE[0], height=SIZE[1], frames=10, seed=7, objects=1, first_object=2, warmup=4)
    seq = write_sequence(SyntheticScene(cfg), tmp_path / "cam")
    before = snapshot(seq)
    for out in (seq, seq / "results", tmp_path):
        assert cli(["eval", str(seq), "--algo", "knn", "--quiet", "--out", str(out)]) == 2
        assert "input" in error_line(capsys, "eval")
        assert snapshot(seq) == before


def test_eval_out_never_deletes_masks_bgsub_did_not_write(tmp_path, capsys):
    cfg = SceneConfig(width=SIZE[0], height=SIZE[1], frames=10, seed=7, objects=1, first_object=2, warmup=4)
    seq = write_sequence(SyntheticScene(cfg), tmp_path / "cam")
    out = tmp_path / "results"
    (out / "cam").mkdir(parents=True)
    cv2.imwrite(str(out / "cam" / "bin000001.png"), np.full((SIZE[1], SIZE[0]), 255, np.uint8))
    before = snapshot(out)
    assert cli(["eval", str(seq), "--algo", "knn", "--quiet", "--out", str(out)]) == 2
    assert "that bgsub did not write" in error_line(capsys, "eval")
    assert snapshot(out) == before


def test_a_checkpoint_named_in_another_format_is_refused_before_the_first_frame(tmp_path, clip, capsys):
    out = tmp_path / "masks"
    assert cli(["run", str(clip), "--out", str(out), "--checkpoint", str(tmp_path / "model.yml"), "--quiet"]) == 2
    assert ".npz name" in error_line(capsys)
    assert not (tmp_path / "model.yml").exists() and not out.exists()
