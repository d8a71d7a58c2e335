"""The C heap's thresholds (bgsub.models._heap): a frame's freed temporaries stay in the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bgsub.models import _heap

# A frame's temporaries at 1920x1080: a grey frame, two masks and a colour frame, written and freed, twenty
# times; prints the minor page faults per round after five rounds of warm-up.
CHURN = """
import json, resource, sys
import numpy as np
if sys.argv[1] == "keep":
    from bgsub.models._heap import keep_heap
    assert keep_heap()
def frame():
    arrays = [np.ones(n, np.uint8) for n in (2 << 20, 2 << 20, 2 << 20, 6 << 20)]
    del arrays
for _ in range(5):
    frame()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    frame()
print(json.dumps((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 20))
"""


def test_the_environment_tunes_the_heap_itself():
    assert not _heap.tuned_by_environment({})
    assert not _heap.tuned_by_environment({"GLIBC_TUNABLES": "glibc.rtld.nns=2"})
    for env in ({"MALLOC_TRIM_THRESHOLD_": "0"}, {"MALLOC_MMAP_THRESHOLD_": "65536"}, {"MALLOC_TOP_PAD_": "0"},
                {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}):
        assert _heap.tuned_by_environment(env), env


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _heap.glibc(), reason="glibc's heap only")
def test_freed_frames_stay_in_the_process():
    """With glibc's own thresholds a round of frame-sized temporaries gives the heap's top back and faults it in
    again every round; after keep_heap (which importing bgsub.models calls) the round reuses it."""
    env = {k: v for k, v in os.environ.items() if not _heap.tuned_by_environment({k: v})}

    def faults(mode: str) -> float:
        out = subprocess.run([sys.executable, "-c", CHURN, mode], capture_output=True, text=True, env=env,
                             timeout=120, check=True)
        return json.loads(out.stdout)

    glibc, kept = faults("glibc"), faults("keep")
    if glibc < 500:
        pytest.skip(f"this glibc keeps the heap's top for this pattern on its own ({glibc:.0f} faults a round)")
    assert kept < 50, (glibc, kept)


def test_importing_the_models_keeps_the_heap_unless_the_environment_tunes_it():
    code = "import bgsub.models._heap as h, bgsub.models; print(h.keep_heap())"
    env = {k: v for k, v in os.environ.items() if not _heap.tuned_by_environment({k: v})}
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert plain.stdout.strip() == str(sys.platform.startswith("linux") and _heap.glibc()), plain.stderr[-2000:]
    tuned = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                           env={**env, "MALLOC_TRIM_THRESHOLD_": "131072"})
    assert tuned.stdout.strip() == "False", tuned.stderr[-2000:]
