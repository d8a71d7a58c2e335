"""The batch engine of ``bgsub batch IN_DIR OUT_DIR``: every video and CDnet sequence under a folder, in parallel.

Finds every video file and every CDnet-layout sequence folder under
``IN_DIR`` (recursively), and processes each in its own worker process (default:
one per core, ``--threads`` numba/OpenCV threads each) or, with ``--scheduler``,
as one task on a Dask cluster (:mod:`bgsub.batch.cluster`), into its own folder under
``OUT_DIR`` that mirrors the input tree: ``IN_DIR/a/b/clip.mp4`` ->
``OUT_DIR/a/b/clip/bin%06d.png``, ``IN_DIR/cat/seq/`` (CDnet) ->
``OUT_DIR/cat/seq/bin%06d.png``; names that would clash get the video's
extension (:func:`bgsub.batch.jobs.plan_jobs`). Symbolic links are resolved: a link to
an input of the tree is that input (one job, under its own name); dangling links,
loops and links to outside ``IN_DIR`` are skipped with a warning, recorded in the
manifest (``skipped_links``) (:func:`bgsub.batch.inputs.find_inputs`). Each input goes through the same
:class:`bgsub.pipeline.Pipeline` as ``bgsub run``: ``--roi``, ``--scale`` and
``--min-area`` apply to every input, and each output folder can also hold
``masks.EXT`` (``--mask-video``), ``overlay.EXT`` (``--overlay``) and
``objects.jsonl``/``.csv`` (``--objects``) (:class:`bgsub.batch.jobs.JobOptions`).

An ``OUT_DIR`` that is or contains the input folder, or lies inside an input sequence, is refused before
anything is written (:func:`bgsub.batch.outputs.check_output_location`), and so is one that
cannot be created or written to, an input tree with a folder that cannot be read,
and a damaged ``manifest.json``; one batch at
a time writes into an ``OUT_DIR`` (:class:`bgsub.batch.outputs.OutputLock`). Each output
folder is filled under a temporary name carrying its job id, ``result.json``
(with the source's path, size and modification time and the settings) is
written last, every file is ``fsync``-ed, and only then is the folder renamed
into place (:class:`bgsub.batch.outputs.JobDir`): an output folder that exists is
finished. ``OUT_DIR/manifest.json`` (written atomically after every input)
records the parameters, each input's status and output folder, frame counts,
fps and errors, and one entry per invocation.

Re-running the same command resumes: an input is skipped only when its folder
holds a finished result of the same source and settings; unfinished, failed or
changed ones are redone, and temporary leftovers of killed runs are removed (also
when nothing is redone). The workers exit when the batch process ends, however it
ends (kill -9 included), and with them the fork server and the resource tracker. A
different algorithm or parameters on the same ``OUT_DIR`` is refused unless
``--overwrite`` (redo everything). One bad video does not stop the others; it is
reported in the manifest and the exit code is 1.

One module per idea: :mod:`~bgsub.batch.inputs` (what is processed),
:mod:`~bgsub.batch.jobs` (where each output goes, what it depends on, when it is
finished), :mod:`~bgsub.batch.outputs` (where a batch may write, how an output
lands), :mod:`~bgsub.batch.threads` (workers and threads),
:mod:`~bgsub.batch.worker` (one job), :mod:`~bgsub.batch.pool` and
:mod:`~bgsub.batch.cluster` (the two executors), :mod:`~bgsub.batch.engine`
(:func:`run_batch`: the manifest, resume, clean-up).
"""

from bgsub.batch.engine import MANIFEST_FILE, default_workers, run_batch
from bgsub.batch.inputs import find_inputs, matches_pattern
from bgsub.batch.jobs import Job, JobOptions, is_finished, plan_jobs
from bgsub.batch.outputs import RESULT_FILE
from bgsub.batch.worker import process_job

__all__ = ["run_batch", "find_inputs", "matches_pattern", "plan_jobs", "is_finished", "process_job", "Job",
           "JobOptions", "MANIFEST_FILE", "RESULT_FILE", "default_workers"]
