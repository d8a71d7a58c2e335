"""``bgsub batch --scheduler``: the batch's jobs on a Dask distributed cluster.

One Dask task per input runs the same worker function as the local process pool
(``bgsub.commands.batch.process_job``), so outputs, ``result.json``, the
manifest, resume and exit codes are the same. The batch process is the Dask
client: it holds the output folder's lock, writes the manifest as each result
arrives, and is the only one that cleans up leftovers of earlier runs.

A task whose worker dies (killed, out of memory, machine lost) is started again
on another worker by the scheduler (up to ``distributed.scheduler.allowed-failures``
times, 3 by default; then the input is reported failed). The new attempt first
removes what the dead one left (its job's temporary folders, named with the job
id); a job whose output this run already committed is not redone.

Every worker must see ``IN_DIR`` and ``OUT_DIR`` at the same paths (a shared
file system) and have the same version of this package installed.

Needs the ``cluster`` extra: ``pip install 'olk-bgsub[cluster]'``.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any, Callable

from bgsub.jobs import available_cores, default_threads
from bgsub.settings import ConfigError

__all__ = ["check_scheduler", "security", "run_jobs", "parse_local"]

_REMOTE = re.compile(r"^(tcp|tls|ucx)://[^\s/]+:\d+/?$")


def _import_distributed():
    try:
        import distributed
    except ImportError:
        raise ConfigError("--scheduler needs Dask distributed: pip install 'olk-bgsub[cluster]' "
                          "(or pip install 'dask[distributed]')") from None
    return distributed


def parse_local(address: str) -> int | None:
    """Worker processes of ``local`` / ``local:N`` (None for a remote address)."""
    if address == "local":
        return available_cores()
    m = re.fullmatch(r"local:(\d+)", address)
    if m:
        n = int(m.group(1))
        if n < 1:
            raise ConfigError(f"--scheduler local:N needs N >= 1, got {address!r}")
        return n
    return None


def check_scheduler(address: str) -> None:
    """Refuse a malformed ``--scheduler`` value, or a missing Dask, with a one-line message."""
    if parse_local(address) is None and not _REMOTE.match(address):
        raise ConfigError(f"--scheduler must be local, local:N or tcp://HOST:PORT (tls://HOST:PORT), got {address!r}")
    _import_distributed()


def security(ca_file: str | None, cert: str | None, key: str | None):
    """A :class:`distributed.Security` for TLS to the scheduler from the ``--tls-*`` files."""
    for name, value in (("--tls-ca-file", ca_file), ("--tls-cert", cert), ("--tls-key", key)):
        if not value:
            raise ConfigError(f"TLS needs --tls-ca-file, --tls-cert and --tls-key; {name} is missing")
        if not Path(value).is_file():
            raise ConfigError(f"{name} {value} does not exist")
    from distributed.security import Security

    return Security(tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key, require_encryption=True)


def _connect(address: str, security: Any):
    distributed = _import_distributed()
    n_local = parse_local(address)
    if n_local is not None:
        cluster = distributed.LocalCluster(n_workers=n_local, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None,
                                           silence_logs=logging.ERROR)
        return distributed.Client(cluster), cluster, n_local
    try:
        client = distributed.Client(address, security=security, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    return client, None, len(client.scheduler_info().get("workers", {}))


def run_jobs(address: str, todo: list, fn: Callable, job_args: tuple, manifest, *, security: Any = None,
             progress: bool = True, log=None) -> bool:
    """Run ``fn(job, *job_args)`` for every job on Dask, recording each result in ``manifest`` as it arrives.

    ``job_args`` ends with ``threads``; when None on a local cluster it becomes
    cores / workers. Returns True when interrupted (Ctrl-C).
    """
    from distributed import as_completed

    log = log if log is not None else sys.stderr
    client, cluster, n_workers = _connect(address, security)
    manifest.data["cluster_workers"] = n_workers
    *args, threads = job_args
    if threads is None and cluster is not None:
        threads = default_threads(n_workers)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), unit="input", desc="inputs", dynamic_ncols=True, file=log)
    interrupted = False
    try:
        futures = {client.submit(fn, job, *args, threads, key=f"bgsub-batch-{job.job_id}", pure=False): job
                   for job in todo}
        for key_job in todo:
            manifest.items[key_job.key]["status"] = "running"
        manifest.save()
        for fut in as_completed(list(futures)):
            job = futures.pop(fut)
            try:
                record = fut.result()
            except Exception as exc:  # KilledWorker after too many worker deaths, or a lost connection
                record = {"status": "failed", "source": job.source, "kind": job.kind, "output": job.output,
                          "error": f"worker failed: {type(exc).__name__}: {exc}"}
            fut.release()
            manifest.items[job.key] = record
            manifest.save()
            if bar is not None:
                bar.update(1)
            if record.get("status") == "failed":
                msg = f"FAILED {job.key}: {record.get('error')}"
                (bar.write(msg, file=log) if bar is not None else print(msg, file=log))
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted: cancelling the cluster's tasks (unfinished inputs are redone next time)", file=log)
        client.cancel(list(futures))
        for job in futures.values():
            if manifest.items[job.key].get("status") in ("pending", "running"):
                manifest.items[job.key]["status"] = "interrupted"
        manifest.save()
    finally:
        if bar is not None:
            bar.close()
        client.close()
        if cluster is not None:
            cluster.close()
    return interrupted
