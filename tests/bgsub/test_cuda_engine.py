"""The GPU engine (``device="cuda"``) against the CPU engine, under numba-cuda's CUDA simulator.

CI has no GPU: the kernels run in the simulator (every CUDA thread a Python thread, so the frames are tiny,
16x12). With the same seed and draws the GPU engine's masks equal the CPU engine's and its state equals the CPU
state within float tolerance; checkpoints move between the engines; without numba-cuda, or without a GPU, asking
for it is one clear error. Skipped where numba-cuda is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# The simulator is chosen when numba.cuda is first imported: before any test of the session runs.
if "numba.cuda" not in sys.modules:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

pytest.importorskip("numba_cuda", reason="numba-cuda is not installed (pip install -e \".[cuda]\")")

import bgsub  # noqa: E402
from bgsub.models import _cuda_engine as ce  # noqa: E402

try:
    ce.cuda_runtime()
    RUNTIME_ERROR = None
except ce.DeviceError as exc:  # numba.cuda was imported without the simulator, and there is no GPU
    RUNTIME_ERROR = str(exc)

needs_runtime = pytest.mark.skipif(RUNTIME_ERROR is not None, reason=f"no CUDA runtime: {RUNTIME_ERROR}")

H, W = 12, 16
REPO = Path(__file__).resolve().parents[2]

#: The state arrays both engines keep, compared array for array.
STATE = ("samples_", "coef_", "ring_", "rho_", "blink_", "prev_mask_", "post_mask_")


def clip(n: int = 20, seed: int = 1) -> list[np.ndarray]:
    """A noisy 16x12 BGR gradient with a block crossing it and, from frame 12, a light 20 % brighter (so that the
    illumination gain, the blink feedback and the diffusion all act)."""
    rng = np.random.default_rng(seed)
    ii, jj = np.mgrid[0:H, 0:W]
    bg = np.stack([60 + 4 * jj + 3 * ii, 90 + 2 * jj, 120 - 3 * ii], axis=2)
    frames = []
    for t in range(n):
        f = bg + rng.integers(-4, 5, size=bg.shape)
        if t >= 12:
            f = f * 1.2
        x = t % (W - 4)
        f[3:8, x:x + 4] = (250, 30, 30)
        frames.append(np.clip(f, 0, 255).astype(np.uint8))
    return frames


def assert_same_state(cpu, gpu) -> None:
    for name in STATE:
        a, b = getattr(cpu, name), getattr(gpu, name)
        if a.dtype.kind == "f":
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7, err_msg=name)
        else:
            assert np.mean(a == b) >= 0.999, name
    assert gpu.n_steps_ == cpu.n_steps_
    assert gpu.n_frames_ == cpu.n_frames_
    assert gpu.scale_ == pytest.approx(cpu.scale_, rel=1e-12)
    assert gpu.gain_ == pytest.approx(cpu.gain_, rel=1e-9)


def run_both(algo: str, frames, rates=None, **params):
    cpu = bgsub.create(algo, **params)
    gpu = bgsub.create(algo, device="cuda", **params)
    agree = []
    for t, f in enumerate(frames):
        lr = -1 if rates is None else rates[t]
        agree.append(np.mean(cpu.apply(f, learningRate=lr) == gpu.apply(f, learningRate=lr)))
        agree.append(np.mean(cpu.getRawMask() == gpu.getRawMask()))  # before the post-processing
    return cpu, gpu, float(np.mean(agree))


@needs_runtime
def test_olkn_masks_and_state_equal_the_cpu_engines():
    cpu, gpu, agree = run_both("olkn", clip())
    assert type(gpu).__name__ == "CudaOLKNSubtractor" and gpu.device == "cuda"
    assert agree >= 0.999
    assert (cpu.getRawMask() > 0).sum() >= 10 and cpu.gain_ > 1.1  # the block and the light were seen
    assert_same_state(cpu, gpu)
    np.testing.assert_array_equal(gpu.getBackgroundImage(), cpu.getBackgroundImage())


@needs_runtime
def test_norma_two_passes_masks_and_state_equal_the_cpu_engines():
    # norma's defaults learn from the post-processed mask (update_mask="post"): a score pass, the CPU's
    # post-processing, an update pass
    cpu, gpu, agree = run_both("norma", clip())
    assert cpu.params["update_mask"] == "post"
    assert agree >= 0.999
    assert_same_state(cpu, gpu)


@needs_runtime
def test_exact_scores_and_frames_without_learning():
    rates = [-1, -1, -1, 0, -1, 0.5, -1, 0, -1, -1]
    cpu, gpu, agree = run_both("olkn", clip(10, seed=2), rates=rates, score_map="exact", median=3)
    assert agree >= 0.999
    np.testing.assert_allclose(gpu.getScoreMap(), cpu.getScoreMap(), rtol=1e-5, atol=1e-6)
    assert_same_state(cpu, gpu)


@needs_runtime
def test_norma_post_update_with_component_filters_and_rates():
    # the update pass reads a post-processed mask the CPU's component filters changed (uploaded), and frames
    # that do not learn or learn at a given rate
    rates = [-1, -1, -1, 0, -1, 0.5, -1, 0, -1, -1]
    cpu, gpu, agree = run_both("norma", clip(10, seed=5), rates=rates, median=5, fill_holes=6, min_area=3)
    assert agree >= 0.999
    # the same sums as the CPU's over row planes (the Gaussian computed in float32), up to float32's rounding: the
    # table's Gaussian would be up to 2e-5 of the sum away
    np.testing.assert_allclose(gpu.getScoreMap(), cpu.getScoreMap(), rtol=0, atol=2e-8)
    assert_same_state(cpu, gpu)


def random_masks(rng, shapes=((12, 16), (9, 7))):
    """0/255 masks of blobs and noise at a few densities and sizes (odd ones included)."""
    for H, W in shapes:
        for density in (0.2, 0.6):
            noise = rng.random((H, W)) < density
            noise[H // 3:H // 3 + 4, W // 4:W // 4 + 5] = True  # a blob
            yield (noise * 255).astype(np.uint8)


@needs_runtime
@pytest.mark.parametrize("k", [3, 5, 7, 9, 11, 13, 15])
def test_the_gpu_median_is_the_cpu_median(k):
    import cv2

    from bgsub.models._cuda_engine import _DeviceState
    from bgsub.pipeline import masks

    cuda = ce.cuda_runtime()
    for m in random_masks(np.random.default_rng(k)):
        H, W = m.shape
        dev = _DeviceState(cuda, H, W, 2, 3)
        dev.mask.copy_to_device(m)
        dev.wrote_raw()
        out = dev.median(k)
        np.testing.assert_array_equal(out, masks.binary_median(m, k))
        np.testing.assert_array_equal(out, cv2.medianBlur(m, k))


@needs_runtime
@pytest.mark.parametrize("k", [3, 5])
def test_the_gpu_dilation_is_cv2s(k):
    import cv2

    from bgsub.models._cuda_engine import _DeviceState

    cuda = ce.cuda_runtime()
    for m in random_masks(np.random.default_rng(10 + k), shapes=((12, 16), (9, 7), (4, 3))):
        H, W = m.shape
        m[:, :] = np.where(np.random.default_rng(k).random((H, W)) < 0.1, 255, 0)  # sparse: the dilation shows
        dev = _DeviceState(cuda, H, W, 2, 3)
        dev.mask.copy_to_device(m)
        dev.dilate_into_post(dev.mask, k)
        np.testing.assert_array_equal(dev.post.copy_to_host(), cv2.dilate(m, np.ones((k, k), np.uint8)))


@needs_runtime
@pytest.mark.parametrize("params", [{"median": 3, "fill_holes": 0, "min_area": 0},
                                    {"median": 0, "fill_holes": 0, "min_area": 0}, {"median": 3, "min_area": 40}])
def test_the_blink_margin_is_dilated_where_the_output_is(monkeypatch, params):
    # an output mask the device holds (the median's, or the raw mask, unchanged by the component filters) is dilated
    # there, and nothing goes up for the blink feedback at the next frame; one the component filters changed is
    # dilated on the host and goes up. Either way the masks and the state are the CPU engine's
    from bgsub.models._cuda_engine import _DeviceState

    ups = []
    up = _DeviceState.up
    monkeypatch.setattr(_DeviceState, "up", lambda self, d, h: ups.append(d is self.post) or up(self, d, h))
    cpu = bgsub.create("olkn", **params)
    gpu = bgsub.create("olkn", device="cuda", **params)
    on_device = []
    for f in clip(12, seed=8):
        ups.clear()
        np.testing.assert_array_equal(gpu.apply(f), cpu.apply(f))
        on_device.append((gpu.__dict__["_post_stale"], any(ups)))
    assert_same_state(cpu, gpu)  # post_mask_ included (downloaded when read)
    for (stale, _), (_, uploaded) in zip(on_device, on_device[1:]):
        assert uploaded != stale  # the host's dilation goes up at the next frame, the device's does not
    dilated = sum(stale for stale, _ in on_device[1:])
    if params.get("min_area") == 40:  # the filter removes the block: then dilated on the host
        assert dilated < len(on_device) - 1
    else:
        assert dilated == len(on_device) - 1


@needs_runtime
def test_median_and_clutter_rule_on_the_gpu_equal_the_cpus(monkeypatch):
    # the median, and the larger aperture while the mask is cluttered, run on the device; the component filters
    # on the CPU: the output masks are the CPU engine's
    from bgsub.models._cuda_engine import _DeviceState

    ran = []
    median = _DeviceState.median
    monkeypatch.setattr(_DeviceState, "median", lambda self, k: ran.append(k) or median(self, k))
    params = {"median": 3, "median_max": 5, "min_area": 2, "fill_holes": 3}
    cpu = bgsub.create("olkn", **params)
    gpu = bgsub.create("olkn", device="cuda", **params)
    frames = clip(10, seed=6)
    for t, f in enumerate(frames):
        if t == 5:  # as a model resumed in a cluttered scene: the larger aperture from here on
            cpu.blobs_ = gpu.blobs_ = 20.0
        m = cpu.apply(f)
        np.testing.assert_array_equal(gpu.apply(f), m)
        if t > 0:  # (the first frame's bootstrap runs on the CPU)
            assert gpu.__dict__["_raw_stale"]  # the raw mask was not downloaded for the median ...
        np.testing.assert_array_equal(gpu.getRawMask(), cpu.getRawMask())  # ... only when asked for
    assert_same_state(cpu, gpu)  # (the previous raw mask downloaded when read)
    assert gpu.blobs_ == cpu.blobs_
    assert ran.count(5) == 5 and ran.count(3) == 10
    assert (m > 0).sum() >= 4


@needs_runtime
def test_one_stream_and_kept_pinned_buffers(monkeypatch):
    # every kernel and copy of a model runs on its own stream, and what comes back every frame (the median, the
    # step counts, the illumination grid) lands in the same page-locked buffers frame after frame, never in the
    # mask apply returns
    from numba import cuda

    from bgsub.models import _cuda_kernels as ck

    streams, pinned = [], []
    launch = ck.launch
    monkeypatch.setattr(ck, "launch", lambda kernel, b, t, stream, *a: streams.append(stream) or launch(kernel, b, t,
                                                                                                       stream, *a))
    pinned_array = cuda.pinned_array
    monkeypatch.setattr(cuda, "pinned_array", lambda *a, **k: pinned.append(pinned_array(*a, **k)) or pinned[-1])
    copies = []
    for name in ("copy_to_host", "copy_to_device"):
        cls = type(cuda.device_array(1, np.uint8))
        real = getattr(cls, name)

        def spy(self, ary=None, stream=0, _real=real):
            copies.append(stream)
            return _real(self, ary, stream=stream)

        monkeypatch.setattr(cls, name, spy)
    gpu = bgsub.create("olkn", device="cuda")
    frames = clip(8, seed=3)
    outs, medians = [], set()
    for f in frames:
        outs.append(gpu.apply(f))
        dev = gpu.__dict__["_dev"]
        if dev.median_host is not None:
            medians.add(id(dev.median_host))
            assert not np.shares_memory(outs[-1], dev.median_host)
    stream = gpu.__dict__["_dev"].stream
    assert len(streams) >= 3 * (len(frames) - 1) and all(s is stream for s in streams)
    assert copies and all(s is stream for s in copies)
    assert medians == {id(gpu.__dict__["_dev"].median_pinned)}
    assert any(b is gpu.__dict__["_dev"].stepped_host for b in pinned)
    assert len(pinned) == 7  # the raw mask, the median, the step counts, the grid's four arrays: allocated once


@needs_runtime
def test_the_profile_times_the_gpu_engines_stages():
    # benchmarks/bgsub_profile.py --device cuda: every stage waits for the model's stream, the median is the GPU's,
    # the upload a part of the frame; nothing stays wrapped
    from bgsub.models._cuda_engine import _DeviceState
    from tests._scripts import load_benchmark

    prof = load_benchmark("bgsub_profile")
    median = _DeviceState.median
    out = prof.profile("olkn", clip(6, seed=4), warm=3, device="cuda")
    assert _DeviceState.median is median
    assert out["frame"] > 0 and out["median"] > 0 and 0 < out["upload"] <= out["frame"]
    assert out["median"] <= out["post"] * 1.001 + 1e-3
    assert 0.0 < out["stepped"] <= 1.0


@needs_runtime
def test_the_prepared_gpu_measurement_runs(tmp_path, capsys):
    # benchmarks/gpu_fps.py is the one script a session with a GPU runs: its agreement check and its timings
    # (every config on both engines and KNN), on frames small enough for the simulator
    from tests._scripts import load_benchmark

    gpu_fps = load_benchmark("gpu_fps")
    agreement = gpu_fps.check(clip(4, seed=5), lambda msg: None, size=(W, H), n=4)
    assert set(agreement) == {"olkn", "norma"}
    for algo in agreement.values():
        assert algo["masks_equal"] >= 0.999 and algo["raw_masks_equal"] >= 0.999
        assert algo["rho_max_abs_diff"] < 1e-9 and algo["n_steps"][0] == algo["n_steps"][1]
    out = tmp_path / "gpu_fps.json"
    assert gpu_fps.main(["--size", f"{W}x{H}", "--algo", "olkn", "--frames", "1", "--cpu-frames", "1",
                         "--warmup", "1", "--no-check", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    results = report["sizes"][0]["results"]
    assert {(r["algo"], r["config"], r["device"]) for r in results} == (
        {("knn", "defaults", "cpu")} | {("olkn", c, d) for c in ("model", "median", "defaults") for d in ("cuda", "cpu")})
    assert all(r["fps"] > 0 for r in results)
    assert f"{W}x{H}" in capsys.readouterr().out


@needs_runtime
def test_checkpoints_move_between_the_engines(tmp_path):
    frames = clip(16, seed=3)
    cpu = bgsub.create("olkn")
    for f in frames[:8]:
        cpu.apply(f)
    cpu.save(tmp_path / "cpu.npz")
    gpu = bgsub.load(tmp_path / "cpu.npz", device="cuda")  # a CPU checkpoint continues on the GPU
    assert gpu.device == "cuda"
    for f in frames[8:12]:
        assert np.mean(cpu.apply(f) == gpu.apply(f)) >= 0.999
    gpu.save(tmp_path / "gpu.npz")  # the GPU's state downloaded, in the CPU engine's arrays
    with np.load(tmp_path / "cpu.npz") as a, np.load(tmp_path / "gpu.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for k in a.files:
            if a[k].dtype.kind != "U":  # (the meta's JSON: other counters)
                assert (a[k].dtype, a[k].shape) == (b[k].dtype, b[k].shape), k
    back = bgsub.load(tmp_path / "gpu.npz")  # ... and continues on the CPU
    assert getattr(back, "device", "cpu") == "cpu"
    assert_same_state(back, gpu)
    for f in frames[12:]:
        m = cpu.apply(f)
        assert np.mean(m == gpu.apply(f)) >= 0.999
        assert np.mean(m == back.apply(f)) >= 0.999
    assert_same_state(cpu, gpu)
    # the other way round in memory: to_device moves the model
    moved = ce.to_device(gpu, "cpu")
    assert type(moved).__name__ == "OLKNSubtractor"
    assert_same_state(cpu, moved)


@needs_runtime
def test_norma_moves_to_the_gpu_and_back_with_its_row_planes_written_anew():
    # the CPU engine's norma scores over row planes kept beside its state: a model that learnt on the GPU meanwhile
    # scores over planes of the state it brings back, not over the ones it left with
    frames = clip(16, seed=6)
    cpu, sub = bgsub.create("norma"), bgsub.create("norma")
    for f in frames[:5]:
        cpu.apply(f)
        sub.apply(f)
    assert sub._planes is not None
    sub = ce.to_device(sub, "cuda")
    assert sub._planes is None  # (not carried to the GPU)
    for f in frames[5:10]:
        assert np.mean(cpu.apply(f) == sub.apply(f)) >= 0.999
    sub = ce.to_device(sub, "cpu")
    for f in frames[10:]:
        assert np.mean(cpu.apply(f) == sub.apply(f)) >= 0.999
        np.testing.assert_allclose(sub.getScoreMap(), cpu.getScoreMap(), rtol=0, atol=2e-8)
    assert_same_state(cpu, sub)


@needs_runtime
def test_reset_and_external_writes():
    frames = clip(6, seed=4)
    cpu = bgsub.create("norma", update_mask="raw")
    gpu = bgsub.create("norma", device="cuda", update_mask="raw")
    for f in frames[:3]:
        cpu.apply(f)
        gpu.apply(f)
    # a write into the state from outside apply reaches the device at the next frame
    cpu.rho_[:4] += 0.01
    gpu.rho_[:4] += 0.01
    for f in frames[3:]:
        assert np.mean(cpu.apply(f) == gpu.apply(f)) >= 0.999
    assert_same_state(cpu, gpu)
    cpu.reset()
    gpu.reset()
    assert gpu.samples_ is None
    small = [f[:8, :10] for f in frames[:2]]
    for f in small:
        np.testing.assert_array_equal(gpu.apply(f), cpu.apply(f))
    assert_same_state(cpu, gpu)


def test_what_the_gpu_engine_does_not_run():
    with pytest.raises(ValueError, match="device must be one of 'cpu', 'cuda'"):
        bgsub.create("olkn", device="gpu")
    with pytest.raises(ce.DeviceError, match="runs on the CPU only"):
        bgsub.create("knn", device="cuda")
    with pytest.raises(ce.DeviceError, match="texture features"):
        bgsub.create("olkn", device="cuda", texture=50.0)
    if RUNTIME_ERROR is None:
        gpu = bgsub.create("olkn", device="cuda")
        with pytest.raises(ce.DeviceError, match="texture features"):
            gpu.set_params(texture=50.0)


def test_without_numba_cuda_one_clear_error(monkeypatch, capsys):
    import numba

    monkeypatch.setitem(sys.modules, "numba.cuda", None)  # numba-cuda not installed
    monkeypatch.delattr(numba, "cuda", raising=False)
    with pytest.raises(ce.DeviceError) as info:
        bgsub.create("olkn", device="cuda")
    msg = str(info.value)
    assert "numba-cuda" in msg and 'pip install -e ".[cuda]"' in msg and "\n" not in msg
    # the commands: one line, exit 2, before any work
    from bgsub.cli import main

    assert main(["bench", "--device", "cuda", "--size", "32x24"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bgsub bench: error: device 'cuda' needs numba-cuda") and err.count("\n") == 1


def test_without_a_gpu_one_clear_error():
    # numba-cuda without the simulator on a machine without a GPU (CI): one line naming what is missing
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    code = ("import bgsub\n"
            "try:\n    bgsub.create('olkn', device='cuda')\n    print('GPU FOUND')\n"
            "except ValueError as exc:\n    print('ERROR', exc)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    if "GPU FOUND" in out.stdout:
        pytest.skip("this machine has a GPU")
    assert out.stdout.startswith("ERROR device 'cuda'"), out.stdout + out.stderr
    assert out.stdout.count("\n") == 1 and "Traceback" not in out.stderr


def test_kernels_take_the_cpu_kernels_argument_groups():
    # the state, rule, policy, feedback and outputs as the CPU kernels' tuples: at most 16 parameters a kernel
    import inspect

    from bgsub.models import _cuda_kernels as ck

    for f in ck._KERNEL_FUNCTIONS:
        names = list(inspect.signature(f).parameters)
        assert len(names) <= 16, f.__name__
        assert {len(sig) for sig in ck.signatures()[f.__name__]} == {len(names)}, f.__name__
    assert list(inspect.signature(ck.olkn_frame).parameters) == ["frame", "state", "scale", "lut", "rule", "policy",
                                                                 "given", "out"]


@pytest.mark.slow
def test_kernels_compile_for_the_gpu():
    # the simulator runs the kernels as Python: that the very same functions compile for a GPU is checked apart,
    # to PTX for compute capability 9.0 (numba-cuda's NVVM, no GPU needed; skipped where NVVM is not installed)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    code = "import json\nfrom bgsub.models._cuda_kernels import compile_ptx_all\nprint(json.dumps(compile_ptx_all()))\n"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=1200)
    missing = [lib for lib in ("nvvm", "nvrtc") if lib in out.stderr.lower()]
    if out.returncode != 0 and missing:
        pytest.skip(f"the CUDA toolkit's {' and '.join(m.upper() for m in missing)} is not installed "
                    "(pip install -e \".[cuda]\")")
    assert out.returncode == 0, out.stderr[-2000:]
    sizes = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(sizes) == {"olkn_frame", "norma_frame", "norma_update_frame", "score_frame", "norma_score_frame",
                          "window_pass", "gather_grid"}
    assert min(sizes.values()) > 1000
