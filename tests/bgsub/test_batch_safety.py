"""``bgsub batch`` cannot harm its input: refused output folders, unique outputs, honest resume, durable commit."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from bgsub.cli import main as cli
from bgsub.batch import find_inputs, plan_jobs
from bgsub.batch.outputs import JobDir, OutputLock, remove_job_partials
from bgsub.synthetic import SceneConfig, SyntheticScene, write_sequence
from bgsub.writers import list_masks
from tests.bgsub.test_sources import write_test_video

REPO = Path(__file__).resolve().parents[2]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and a hash of its content."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def clash(tmp_path) -> Path:
    """A video and a CDnet folder with the same stem, and equal stems in two subfolders."""
    root = tmp_path / "in"
    root.mkdir()
    write_test_video(root / "cam.avi", frames=12, seed=1)
    cfg = SceneConfig(width=64, height=48, frames=10, seed=3, objects=2, first_object=1, warmup=3)
    write_sequence(SyntheticScene(cfg), root / "cam")
    for sub, seed in (("a", 2), ("b", 3)):
        (root / sub).mkdir()
        write_test_video(root / sub / "clip.avi", frames=8 + seed, seed=seed)
    return root


@pytest.mark.parametrize("where", ["same", "parent", "sequence"])
def test_unsafe_output_folder_is_refused_and_nothing_written(clash, tmp_path, capsys, where):
    out = {"same": clash, "parent": tmp_path, "sequence": clash / "cam" / "masks"}[where]
    before = snapshot(tmp_path)
    rc = cli(["batch", str(clash), str(out), "--algo", "knn", "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bgsub batch: error:") and "\n" not in err and "Traceback" not in err
    why = {"same": "is the input folder", "parent": "contains the input folder",
           "sequence": "lies inside the input sequence folder"}[where]
    assert f"OUT_DIR {out} {why}" in err
    assert snapshot(tmp_path) == before
    assert not (clash / "cam" / "masks").exists()


def test_output_inside_input_is_excluded_from_the_scan(clash, capsys):
    out = clash / "results"
    assert cli(["batch", str(clash), str(out), "--algo", "knn", "--quiet"]) == 0
    first = json.loads((out / "manifest.json").read_text())
    assert cli(["batch", str(clash), str(out), "--algo", "knn", "--quiet"]) == 0
    second = json.loads((out / "manifest.json").read_text())
    assert sorted(first["items"]) == sorted(second["items"]) == ["a/clip.avi", "b/clip.avi", "cam", "cam.avi"]
    assert second["runs"][-1]["skipped"] == 4 and second["runs"][-1]["todo"] == 0


def test_every_input_gets_its_own_folder(clash, tmp_path):
    out = tmp_path / "out"
    assert cli(["batch", str(clash), str(out), "--algo", "knn", "--workers", "2", "--quiet"]) == 0
    items = json.loads((out / "manifest.json").read_text())["items"]
    outputs = {k: Path(v["output"]).relative_to(out.resolve()).as_posix() for k, v in items.items()}
    assert outputs == {"cam": "cam", "cam.avi": "cam_avi", "a/clip.avi": "a/clip", "b/clip.avi": "b/clip"}
    frames = {"cam": 10, "cam.avi": 12, "a/clip.avi": 10, "b/clip.avi": 11}
    for key, rel in outputs.items():
        result = json.loads((out / rel / "result.json").read_text())
        assert result["source"] == str((clash / key).resolve())
        assert len(list_masks(out / rel)) == frames[key]
    assert not [p for p in out.rglob(".*")]


def test_plan_is_unique_deterministic_and_independent_of_the_pattern(tmp_path):
    root = tmp_path / "in"
    for rel in ("x.mp4", "x/y.avi", "X_mp4.avi", "dup.avi", "dup.mp4", "s/t.mkv", "s.mkv"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"")
    inputs = find_inputs(root)
    jobs = plan_jobs(root, tmp_path / "o", inputs)
    outs = {j.key: Path(j.output).relative_to((tmp_path / "o").resolve()).as_posix() for j in jobs}
    assert outs == {"x.mp4": "x_mp4", "x/y.avi": "x/y", "X_mp4.avi": "X_mp4_avi", "dup.avi": "dup_avi",
                    "dup.mp4": "dup_mp4", "s/t.mkv": "s/t", "s.mkv": "s_mkv"}
    assert len({o.casefold() for o in outs.values()}) == len(outs)
    # no output is inside another's
    assert not any(a != b and b.startswith(a + "/") for a in outs.values() for b in outs.values())
    assert plan_jobs(root, tmp_path / "o", inputs) == jobs
    assert len({j.job_id for j in plan_jobs(root, tmp_path / "o", inputs, "run1")}) == len(jobs)


def test_pattern_does_not_move_outputs(clash, tmp_path):
    out = tmp_path / "out"
    assert cli(["batch", str(clash), str(out), "--algo", "knn", "--pattern", "*.avi", "--quiet"]) == 0
    assert (out / "cam_avi" / "result.json").is_file() and not (out / "cam").exists()


def test_resume_redoes_a_changed_source_or_foreign_result(clash, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["batch", str(clash), str(out), "--algo", "knn", "--quiet"]
    assert cli(args) == 0
    # the source changed since (same path, new content)
    write_test_video(clash / "a" / "clip.avi", frames=6, seed=9)
    # a result.json that records another source is not trusted
    shutil.rmtree(out / "b" / "clip")
    shutil.copytree(out / "cam_avi", out / "b" / "clip")
    capsys.readouterr()
    assert cli(args) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["runs"][-1]["todo"] == 2 and m["runs"][-1]["skipped"] == 2
    assert len(list_masks(out / "a" / "clip")) == 6
    assert json.loads((out / "b" / "clip" / "result.json").read_text())["source"] == str(
        (clash / "b" / "clip.avi").resolve())
    assert len(list_masks(out / "b" / "clip")) == 11


def test_a_second_batch_on_the_same_output_is_refused(clash, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    with OutputLock(out):
        rc = cli(["batch", str(clash), str(out), "--algo", "knn", "--quiet"])
    assert rc == 2
    assert "another bgsub batch is writing into" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_job_clean_up_touches_only_its_own_temporaries(tmp_path):
    final = tmp_path / "out" / "clip"
    mine = JobDir(final, "run-1")
    other = JobDir(final, "run-2")
    mine_tmp, other_tmp = mine.open(), other.open()
    (mine_tmp / "bin000001.png").write_bytes(b"x")
    assert remove_job_partials(final, "run-1") == 1
    assert not mine_tmp.exists() and other_tmp.is_dir()


def test_commit_replaces_a_finished_folder_whole(tmp_path):
    final = tmp_path / "clip"
    final.mkdir()
    (final / "old.png").write_bytes(b"old")
    d = JobDir(final, "j")
    tmp = d.open()
    (tmp / "new.png").write_bytes(b"new")
    (tmp / "sub").mkdir()
    (tmp / "sub" / "f").write_bytes(b"f")
    assert d.commit() == final
    assert sorted(p.relative_to(final).as_posix() for p in final.rglob("*")) == ["new.png", "sub", "sub/f"]
    assert [p.name for p in tmp_path.iterdir()] == ["clip"]


def test_threads_option(clash, tmp_path, capsys):
    assert cli(["batch", str(clash), str(tmp_path / "o"), "--threads", "0", "--quiet"]) == 2
    assert "--threads must be >= 1" in capsys.readouterr().err
    # one worker would get every core by default; --threads 1 holds it to one
    assert cli(["batch", str(clash), str(tmp_path / "o"), "--algo", "knn", "--workers", "1", "--threads", "1",
                "--pattern", "a/*", "--quiet"]) == 0
    run = json.loads((tmp_path / "o" / "manifest.json").read_text())["runs"][-1]
    assert run["workers"] == 1 and run["threads"] == 1
    assert json.loads((tmp_path / "o" / "a" / "clip" / "result.json").read_text())["threads"] == 1


def test_bundled_videos_with_two_workers_give_two_complete_folders(tmp_path):
    # videos/ holds sample.mp4 and the CDnet folder sample/: both once mapped to OUT/sample
    out = tmp_path / "out"
    assert cli(["batch", str(REPO / "videos"), str(out), "--workers", "2", "--quiet"]) == 0
    for name, source in (("sample", "sample"), ("sample_mp4", "sample.mp4")):
        assert len(list_masks(out / name)) == 300
        result = json.loads((out / name / "result.json").read_text())
        assert result["status"] == "done" and Path(result["source"]).name == source
    assert not [p for p in out.rglob(".*")]
