"""``bgsub batch`` under faults: unusable output folders, unreadable or linked input trees, damaged manifests,
TLS options, worker bounds, a private local cluster, leftovers of killed runs, and kill -9 of the batch.

Every failure ends as one line ``bgsub batch: error: ...`` (exit 2 for bad input), never a traceback.

The suite runs as root in places: root reads and writes whatever the permission bits say. The permission
probes are therefore run twice: for real, in a subprocess without the capabilities that let root ignore
permissions (``setpriv``; skipped where it is missing), and in this process with ``os.scandir``/``os.stat``/
``os.open`` made to raise ``PermissionError`` for the paths concerned (said in each test).
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bgsub.cli import main as cli
from bgsub.writers import list_masks
from tests.bgsub.test_sources import write_test_video

REPO = Path(__file__).resolve().parents[2]


def one_line_error(err: str) -> str:
    err = err.strip()
    assert err.startswith("bgsub batch: error:"), err
    assert "\n" not in err and "Traceback" not in err, err
    return err


@pytest.fixture()
def tree(tmp_path) -> Path:
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    write_test_video(root / "a.mp4", frames=6, size=(64, 48), seed=1)
    write_test_video(root / "sub" / "b.avi", frames=6, size=(64, 48), seed=2)
    return root


def batch(*args) -> int:
    return cli(["batch", *map(str, args), "--algo", "knn", "--quiet"])


# --------------------------------------------------------------------------
# output folders that cannot be used
# --------------------------------------------------------------------------


def test_output_under_a_file_is_refused_before_anything(tree, tmp_path, capsys):
    (tmp_path / "afile").write_text("not a folder")
    assert batch(tree, tmp_path / "afile" / "out") == 2
    err = one_line_error(capsys.readouterr().err)
    assert "afile is a file, not a folder" in err
    assert (tmp_path / "afile").read_text() == "not a folder"


def _without_dac(cmd: list[str]) -> list[str]:
    """``cmd`` run so that permission bits apply (root drops the capabilities that override them)."""
    if os.geteuid() != 0:
        return cmd
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("needs setpriv to drop root's permission override")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}", "--", *cmd]


def _cli_subprocess(args: list[str]) -> subprocess.CompletedProcess:
    cmd = _without_dac([sys.executable, "-m", "bgsub", "batch", *args, "--algo", "knn", "--quiet"])
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600)
    if "setpriv" in cmd[0] and "setpriv:" in p.stderr:
        pytest.skip(f"setpriv cannot drop capabilities here: {p.stderr.strip()}")
    return p


@pytest.mark.parametrize("case", ["existing", "new"])
def test_read_only_output_is_refused_for_real(tree, tmp_path, case):
    ro = tmp_path / "ro"
    ro.mkdir()
    out = ro if case == "existing" else ro / "out"
    ro.chmod(0o555)
    try:
        p = _cli_subprocess([str(tree), str(out)])
    finally:
        ro.chmod(0o755)
    assert p.returncode == 2, p.stderr
    err = one_line_error(p.stderr)
    assert "Permission denied" in err and str(out) in err
    assert list(ro.iterdir()) == []


def test_read_only_output_subfolder_is_refused_before_any_job_for_real(tree, tmp_path):
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "sub").chmod(0o555)
    try:
        p = _cli_subprocess([str(tree), str(out)])
    finally:
        (out / "sub").chmod(0o755)
    assert p.returncode == 2, p.stderr
    err = one_line_error(p.stderr)
    assert "cannot write into the output folder" in err and "Permission denied" in err
    assert sorted(q.name for q in out.iterdir()) == ["sub"]


def test_read_only_output_is_refused_in_process(tree, tmp_path, capsys, monkeypatch):
    """In this process (root), with ``os.open``, ``os.mkdir`` and ``open`` raising EACCES for writes inside the
    output folder."""
    out = tmp_path / "out"
    out.mkdir()
    real_open, real_mkdir = os.open, os.mkdir

    def denied(path):
        return Path(os.fsdecode(path)).absolute().parent == out

    def fake_open(path, flags, *a, **k):
        if denied(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, *a, **k)

    def fake_mkdir(path, *a, **k):
        if denied(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_mkdir(path, *a, **k)

    def fake_builtin_open(file, mode="r", *a, **k):
        if not isinstance(file, int) and denied(file) and set(mode) & set("wax+"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(file))
        return real_builtin_open(file, mode, *a, **k)

    real_builtin_open = builtins.open
    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    monkeypatch.setattr(builtins, "open", fake_builtin_open)
    monkeypatch.setattr(io, "open", fake_builtin_open)
    assert batch(tree, out) == 2
    err = one_line_error(capsys.readouterr().err)
    assert "cannot write into OUT_DIR" in err and "Permission denied" in err
    assert list(out.iterdir()) == []


# --------------------------------------------------------------------------
# input trees that cannot be read, or hold links
# --------------------------------------------------------------------------


def test_unreadable_folder_in_the_tree_is_a_clear_error_for_real(tree, tmp_path):
    locked = tree / "locked"
    locked.mkdir()
    write_test_video(locked / "c.avi", frames=4, size=(64, 48), seed=3)
    locked.chmod(0)
    try:
        p = _cli_subprocess([str(tree), str(tmp_path / "out")])
    finally:
        locked.chmod(0o755)
    assert p.returncode == 2, p.stderr
    err = one_line_error(p.stderr)
    assert "cannot read" in err and "locked" in err and "Permission denied" in err
    assert not (tmp_path / "out").exists()


def test_unreadable_folder_in_the_tree_is_a_clear_error_in_process(tree, tmp_path, capsys, monkeypatch):
    """In this process (root), with listing ``in/locked`` and looking up anything in it raising EACCES, as a
    folder of mode 000 does for anyone but root."""
    locked = tree / "locked"
    (locked / "input").mkdir(parents=True)
    real_scandir, real_stat = os.scandir, os.stat

    def inside(path) -> bool:
        return Path(os.fsdecode(path)).absolute().parent == locked

    def fake_scandir(path="."):
        if Path(os.fsdecode(path)).absolute() == locked:
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_scandir(path)

    def fake_stat(path, *a, **k):
        if not isinstance(path, int) and inside(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_stat(path, *a, **k)

    monkeypatch.setattr(os, "scandir", fake_scandir)
    monkeypatch.setattr(os, "stat", fake_stat)
    assert batch(tree, tmp_path / "out") == 2
    err = one_line_error(capsys.readouterr().err)
    assert "cannot read" in err and "locked" in err and "Permission denied" in err
    assert not (tmp_path / "out").exists()


def test_links_are_resolved_deduplicated_and_bad_ones_skipped_with_a_warning(tree, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    write_test_video(other / "x.avi", frames=4, size=(64, 48), seed=4)
    (tree / "c.mp4").symlink_to("a.mp4")  # another name of an input of the tree
    (tree / "dangling.mp4").symlink_to("nowhere.mp4")
    (tree / "outside.avi").symlink_to(other / "x.avi")
    (tree / "ext").symlink_to(other)  # a folder linked from outside
    (tree / "sub" / "loop").symlink_to("..")  # a loop
    (tree / "self.mp4").symlink_to("self.mp4")  # a link to itself
    out = tmp_path / "out"
    assert batch(tree, out) == 0
    captured = capsys.readouterr()
    err = captured.err
    assert "Traceback" not in err
    assert "6 links skipped (see the warnings)" in captured.out
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["items"]) == ["a.mp4", "sub/b.avi"]
    assert manifest["runs"][-1]["todo"] == 2
    # the duplicate does not move a.mp4's output to out/a_mp4
    assert manifest["items"]["a.mp4"]["output"] == str((out / "a").resolve())
    assert len(list_masks(out / "a")) == 6 and not (out / "a_mp4").exists() and not (out / "c").exists()
    skipped = manifest["skipped_links"]
    assert sorted(skipped) == ["c.mp4", "dangling.mp4", "ext", "outside.avi", "self.mp4", "sub/loop"]
    assert "a.mp4" in skipped["c.mp4"]["reason"]
    assert "dangling" in skipped["dangling.mp4"]["reason"]
    assert "outside" in skipped["outside.avi"]["reason"] and "outside" in skipped["ext"]["reason"]
    assert "loop" in skipped["sub/loop"]["reason"] and "loop" in skipped["self.mp4"]["reason"]
    assert len(manifest["runs"][-1]["warnings"]) == 6
    for name in skipped:
        assert f"warning: {name}: " in err


def test_a_link_to_an_input_of_the_tree_gives_one_job_under_the_inputs_name(tree, tmp_path, capsys):
    (tree / "c.mp4").symlink_to("a.mp4")
    (tree / "linked_sub").symlink_to("sub")
    out = tmp_path / "out"
    assert batch(tree, out) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["items"]) == ["a.mp4", "sub/b.avi"] and manifest["runs"][-1]["todo"] == 2
    assert sorted(p.name for p in out.iterdir()) == ["a", "manifest.json", "sub"]


def test_a_linked_input_folder_is_read_through_its_link(tree, tmp_path, capsys):
    link = tmp_path / "link_to_in"
    link.symlink_to(tree)
    out = tmp_path / "out"
    assert batch(link, out) == 0
    assert sorted(json.loads((out / "manifest.json").read_text())["items"]) == ["a.mp4", "sub/b.avi"]


# --------------------------------------------------------------------------
# a damaged manifest
# --------------------------------------------------------------------------


@pytest.mark.parametrize("damage", [{"config": 5}, {"items": []}, {"runs": "x"}, {"items": {"a.mp4": 3}}])
def test_damaged_manifest_is_refused(tree, tmp_path, capsys, damage):
    out = tmp_path / "out"
    out.mkdir()
    text = json.dumps({"format": "bgsub-batch-manifest", "version": 1, **damage})
    (out / "manifest.json").write_text(text)
    assert batch(tree, out) == 2
    err = one_line_error(capsys.readouterr().err)
    assert "manifest.json is damaged" in err
    assert (out / "manifest.json").read_text() == text
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]


# --------------------------------------------------------------------------
# the scheduler's options
# --------------------------------------------------------------------------


def test_tls_address_without_the_tls_files_is_refused(tree, tmp_path, capsys):
    pytest.importorskip("distributed")
    assert batch(tree, tmp_path / "out", "--scheduler", "tls://127.0.0.1:1") == 2
    err = one_line_error(capsys.readouterr().err)
    assert "--tls-ca-file, --tls-cert and --tls-key" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:1", "local:1"])
def test_tls_files_are_refused_where_they_would_be_ignored(tree, tmp_path, capsys, address):
    pytest.importorskip("distributed")
    pem = tmp_path / "x.pem"
    pem.write_text("x")
    tls = ["--tls-ca-file", pem, "--tls-cert", pem, "--tls-key", pem]
    assert batch(tree, tmp_path / "out", "--scheduler", address, *tls) == 2
    err = one_line_error(capsys.readouterr().err)
    assert "are for --scheduler tls://" in err
    assert not (tmp_path / "out").exists()


def test_tls_files_that_are_not_certificates_are_refused(tree, tmp_path, capsys):
    pytest.importorskip("distributed")
    pem = tmp_path / "x.pem"
    pem.write_text("not a certificate")
    tls = ["--tls-ca-file", pem, "--tls-cert", pem, "--tls-key", pem]
    assert batch(tree, tmp_path / "out", "--scheduler", "tls://127.0.0.1:1", *tls) == 2
    assert "do not make a TLS identity" in one_line_error(capsys.readouterr().err)


@pytest.mark.parametrize("option", [["--scheduler", "local:99999999999999999999"], ["--scheduler", "local:100000"],
                                    ["--workers", "100000"]])
def test_worker_count_is_bounded(tree, tmp_path, capsys, option):
    if option[0] == "--scheduler":
        pytest.importorskip("distributed")
    from bgsub.batch.threads import max_workers

    assert batch(tree, tmp_path / "out", *option) == 2
    err = one_line_error(capsys.readouterr().err)
    assert f"at most {max_workers()}" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_tls_files_are_used_to_reach_a_tls_scheduler(tree, tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("cryptography")
    from distributed.security import Security

    sec = Security.temporary()
    files = {}
    for option, text in (("--tls-ca-file", sec.tls_ca_file), ("--tls-cert", sec.tls_client_cert),
                         ("--tls-key", sec.tls_client_key)):
        files[option] = tmp_path / f"{option.strip('-')}.pem"
        files[option].write_text(text)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  protocol="tls://", security=sec, dashboard_address=None) as local:
        address = local.scheduler_address
        assert address.startswith("tls://")
        args = [x for option, path in files.items() for x in (option, path)]
        assert batch(tree, tmp_path / "out", "--scheduler", address, *args) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert {k: v["status"] for k, v in manifest["items"].items()} == {"a.mp4": "done", "sub/b.avi": "done"}


@pytest.mark.slow
def test_local_cluster_admits_only_the_batch(tmp_path):
    """The local cluster listens on 127.0.0.1 with TLS keys only the batch holds: a client without them, or with
    other keys, cannot connect (and so cannot run code as the batch's user)."""
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("cryptography")
    from distributed.security import Security

    from bgsub.batch import cluster

    client, local, n = cluster._connect("local:1", None)
    try:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:") and n == 1
        assert client.submit(lambda x: x + 1, 1).result(timeout=60) == 2  # the batch itself can
        for security in (None, Security.temporary()):
            with pytest.raises((OSError, TimeoutError)):
                distributed.Client(address.replace("tls://", "tcp://") if security is None else address,
                                   security=security, timeout="3s")
    finally:
        client.close()
        local.close()


# --------------------------------------------------------------------------
# leftovers of killed runs, and kill -9
# --------------------------------------------------------------------------


def test_leftovers_of_killed_runs_are_removed_when_nothing_is_redone(tree, tmp_path, capsys):
    out = tmp_path / "out"
    assert batch(tree, out) == 0
    masks = {p.relative_to(out): p.read_bytes() for p in out.rglob("*.png")}
    # what a killed run leaves: a job's temporary folder, a manifest write, one in a subfolder
    (out / ".a.partial-1a2b3c4d-0-4242-abcdef").mkdir()
    (out / ".a.partial-1a2b3c4d-0-4242-abcdef" / "bin000001.png").write_bytes(b"x")
    (out / ".manifest.partial-4242-abcdef.json").write_text("{")
    (out / "sub" / ".b.partial-1a2b3c4d-1-4243-fedcba").mkdir()
    capsys.readouterr()
    assert batch(tree, out) == 0
    err = capsys.readouterr().err
    assert "2 finished earlier, 0 to do" in err and "removed 3 unfinished outputs" in err
    assert not [p for p in out.rglob("*") if ".partial" in p.name]
    assert json.loads((out / "manifest.json").read_text())["runs"][-1]["stale_removed"] == 3
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*.png")} == masks


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the batch's processes in /proc")
def test_kill_9_of_batch_leaves_no_process_and_the_next_run_finishes_identically(tmp_path):
    """benchmarks/batch_kill.py, 3 trials on tiny videos: the batch killed alone (twice), then with its whole
    process group; after each, nothing of it alive within 10 s, no temporary name after the next run, and the
    outputs byte-identical to an uninterrupted run."""
    cmd = [sys.executable, str(REPO / "benchmarks" / "batch_kill.py"), "--trials", "3", "--videos", "3",
           "--frames", "80", "--size", "64x48", "--kill-window", "0.5", "--json", "--keep", str(tmp_path / "w")]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=900)
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    assert summary["processes_left"] == 0, summary
    assert summary["partials_after_rerun"] == 0, summary
    assert summary["all_identical"], summary
    assert summary["ok"] == summary["trials"] == 3, summary
    assert summary["killed"] >= 1, summary
    assert p.returncode == 0
