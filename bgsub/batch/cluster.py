"""``bgsub batch --scheduler``: the batch's jobs on a Dask distributed cluster.

One Dask task per input runs the same worker function as the local process pool
(:func:`bgsub.batch.worker.process_job`), so outputs, ``result.json``, the
manifest, resume and exit codes are the same. The batch process is the Dask
client: it holds the output folder's lock, writes the manifest as each result
arrives, and is the only one that cleans up leftovers of earlier runs.

A task whose worker dies (killed, out of memory, machine lost) is started again
on another worker by the scheduler (up to ``distributed.scheduler.allowed-failures``
times, 3 by default; then the input is reported failed). The new attempt first
removes what the dead one left (its job's temporary folders, named with the job
id); a job whose output this run already committed is not redone.

``local`` / ``local:N`` (N at most 4 per core) start a :class:`distributed.LocalCluster`
on 127.0.0.1 with TLS keys made for it and held only in memory by the batch and
its workers (``Security.temporary()``, which needs the ``cryptography`` package):
no other process can connect to it and run code as the batch's user. A remote
``tls://`` scheduler needs the ``--tls-*`` files, which are refused with any other
address (they would be ignored).

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

from bgsub.batch.threads import WORKERS_PER_CORE, available_cores, default_threads, max_workers
from bgsub.settings import ConfigError

__all__ = ["check_scheduler", "security", "local_security", "run_jobs", "parse_local", "max_local_workers"]

_REMOTE = re.compile(r"^(tcp|tls|ucx)://[^\s/]+:\d+/?$")


def _import_distributed():
    try:
        import distributed
    except ImportError:
        raise ConfigError("--scheduler needs Dask distributed: pip install 'olk-bgsub[cluster]' "
                          "(or pip install 'dask[distributed]')") from None
    return distributed


def parse_local(address: str) -> int | None:
    """Worker processes of ``local`` / ``local:N`` (None for a remote address).

    Raises
    ------
    ConfigError
        For N < 1, or N more than :func:`max_local_workers` (each worker is a
        process of 100-300 MiB: many more than the cores only slow the batch and
        can run the machine out of memory).
    """
    if address == "local":
        return available_cores()
    m = re.fullmatch(r"local:(\d+)", address)
    if m:
        digits = m.group(1)
        cap = max_workers()
        n = int(digits) if len(digits) <= 9 else cap + 1
        if n < 1:
            raise ConfigError(f"--scheduler local:N needs N >= 1, got {address!r}")
        if n > cap:
            raise ConfigError(f"--scheduler local:N takes at most {cap} worker processes on this machine "
                              f"({WORKERS_PER_CORE} per core, and what its memory holds), got {digits}")
        return n
    return None


def check_scheduler(address: str, tls_files: tuple = (None, None, None)) -> None:
    """Refuse a malformed ``--scheduler`` value, ``--tls-*`` files that it would not use, a ``tls://`` address
    without them, or a missing Dask, with a one-line message."""
    if parse_local(address) is None and not _REMOTE.match(address):
        raise ConfigError(f"--scheduler must be local, local:N or tcp://HOST:PORT (tls://HOST:PORT), got {address!r}")
    if any(tls_files) and not address.startswith("tls://"):
        what = "a local cluster makes its own private TLS keys" if address.startswith("local") else \
            f"{address.split('://')[0]}:// is not encrypted"
        raise ConfigError(f"--tls-ca-file, --tls-cert and --tls-key are for --scheduler tls://HOST:PORT ({what}); "
                          "leave them out, or give a tls:// address")
    if address.startswith("tls://") and not all(tls_files):
        missing = [n for n, v in zip(("--tls-ca-file", "--tls-cert", "--tls-key"), tls_files) if not v]
        raise ConfigError(f"--scheduler {address} needs --tls-ca-file, --tls-cert and --tls-key "
                          f"({', '.join(missing)} missing)")
    _import_distributed()


def security(ca_file: str | None, cert: str | None, key: str | None):
    """A :class:`distributed.Security` for TLS to the scheduler from the ``--tls-*`` files, checked: the files
    must exist and load as a CA certificate and a matching certificate and private key."""
    for name, value in (("--tls-ca-file", ca_file), ("--tls-cert", cert), ("--tls-key", key)):
        if not value:
            raise ConfigError(f"TLS needs --tls-ca-file, --tls-cert and --tls-key; {name} is missing")
        if not Path(value).is_file():
            raise ConfigError(f"{name} {value} " + ("is not a file" if Path(value).exists() else "does not exist"))
    import ssl

    from distributed.security import Security

    sec = Security(tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key, require_encryption=True)
    try:
        sec.get_connection_args("client")  # loads the files into an SSL context now, not at the first connection
    except ssl.SSLError as exc:
        raise ConfigError(f"the --tls-* files do not make a TLS identity ({exc.reason or exc}): --tls-ca-file must "
                          "be a PEM CA certificate, --tls-cert a PEM certificate and --tls-key its private key") \
            from None
    except OSError as exc:
        raise ConfigError(f"cannot read the --tls-* files: {exc.strerror or exc}") from None
    return sec


def local_security():
    """Fresh TLS keys for a local cluster, held in memory by this process and its workers only: no other process
    can connect to the cluster (and run code on it as this user)."""
    try:
        from distributed.security import Security

        return Security.temporary()
    except ImportError:
        raise ConfigError("--scheduler local needs the cryptography package for the local cluster's private TLS "
                          "keys: pip install cryptography") from None


def _connect(address: str, security: Any):
    distributed = _import_distributed()
    n_local = parse_local(address)
    if n_local is not None:
        # TLS with keys only this process and its workers hold, on the loopback interface only: any local user
        # could otherwise connect to the scheduler and run code as the batch's user.
        cluster = distributed.LocalCluster(n_workers=n_local, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", protocol="tls://", security=local_security(),
                                           dashboard_address=None, silence_logs=logging.ERROR)
        try:
            return distributed.Client(cluster), cluster, n_local
        except BaseException:
            cluster.close()
            raise
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
