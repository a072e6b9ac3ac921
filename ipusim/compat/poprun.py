"""``ipusim run --instances N --replicas R script.py``: a PopDist job, as ``poprun`` launches it.

``poprun --num-instances N --num-replicas R python script.py`` starts N processes of the script,
each with the PopDist environment of its instance (:mod:`ipusim.compat.popdist`): R / N local
replicas, its replica index offset, the IPUs per replica. :func:`run_instances` does the same
with ``ipusim run``: N processes, started together, each a full ``ipusim run`` of the script
writing its reports under ``<output>/instance-K``, each line it prints tagged
``[1,K]<stdout>:`` / ``[1,K]<stderr>:`` as ``poprun`` (``mpirun --tag-output``) tags it.

What each instance simulates. The script configures its IPUs with
``popdist.tensorflow.set_ipu_config`` (or sets ``process_count`` / ``process_index`` itself):
then every instance's simulation is of the whole job - R replicas, gradients reduced over the
IPU-Links and GW-Links, N host processes each feeding its R / N replicas from its own input
pipeline on its share of the host server (:func:`ipusim.session.host_cpu_per_process`) - while
its numbers are its own R / N replicas' on its own data shard. All instances execute in lockstep
on the IPUs, so the job's report is the slowest instance's: the combined report
``<output>/NN-name`` of each program is that instance's report, with ``instances.csv`` (one row
per instance: its simulated seconds, steps and samples) and ``extra.instances`` = N. Samples in
a report count every replica of the job (R per step), not one instance's.

The numbers of the job's one cross-replica reduction: each Keras training step's gradients
(and layers' state updates) are averaged over every replica of the job, the instances handing
their replicas' arrays to each other through a folder the launcher shares with them
(:mod:`ipusim.session.exchange`), so the instances' weights stay identical as on the IPUs; so
do custom loops' updates through ``CrossReplicaOptimizer`` (and its accumulating variants).
Not done across instances: other in-graph collectives (``cross_replica_sum`` of activations)
and Horovod's host-side collectives, which stay within an instance (the timing is unaffected).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TextIO

import pandas as pd

from ipusim._files import write_bytes_atomic
from ipusim.compat.runner import RunResult, clear_old_reports, report_folders
from ipusim.errors import ConfigurationError
from ipusim.session.exchange import ABORT_FILE, EXCHANGE_ENVIRONMENT

__all__ = ["InstancesResult", "instance_environment", "run_instances"]


class InstancesResult(RunResult):
    """What :func:`run_instances` did.

    Attributes:
        output: the output folder.
        reports: the combined report folders, in the order the programs first ran.
        exit_code: 0 when every instance succeeded, else the first failing instance's code.
    """


def instance_environment(
    instance: int, instances: int, replicas: int, ipus_per_replica: int
) -> dict[str, str]:
    """The PopDist environment ``poprun`` gives instance ``instance`` of the job."""
    local = replicas // instances
    return {
        "POPDIST_NUM_TOTAL_REPLICAS": str(replicas),
        "POPDIST_NUM_LOCAL_REPLICAS": str(local),
        "POPDIST_NUM_IPUS_PER_REPLICA": str(ipus_per_replica),
        "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE": "1",
        "POPDIST_REPLICA_INDEX_OFFSET": str(instance * local),
        "POPDIST_LOCAL_INSTANCE_INDEX": str(instance),
    }


def check_job(instances: int, replicas: int, ipus_per_replica: int) -> None:
    """Raise ConfigurationError unless the job's numbers fit together (as poprun checks them)."""
    for name, value in (
        ("--instances", instances),
        ("--replicas", replicas),
        ("--ipus-per-replica", ipus_per_replica),
    ):
        if not isinstance(value, int) or value < 1:
            raise ConfigurationError(
                f"ipusim run {name} must be a whole number >= 1; got {value!r}"
            )
    if replicas % instances:
        raise ConfigurationError(
            f"ipusim run --replicas {replicas} --instances {instances}: every instance needs "
            f"the same number of replicas; give --replicas a multiple of {instances}."
        )


def _pump(stream: TextIO, tag: str, out: TextIO, lock: threading.Lock) -> None:
    for line in stream:
        with lock:
            out.write(f"{tag}{line}")
            out.flush()


def _launch(
    script: Path,
    args: list[str],
    folder: Path,
    environment: dict[str, str],
    options: list[str],
) -> subprocess.Popen[str]:
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, **environment}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "ipusim", "run", "-o", str(folder), *options, str(script)]
    return subprocess.Popen(
        [*command, "--", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_instances(
    script: str | os.PathLike[str],
    args: list[str],
    output: Path,
    instances: int,
    replicas: int,
    ipus_per_replica: int = 1,
    options: list[str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> InstancesResult:
    """Run ``script`` as the ``instances`` processes of a PopDist job and combine their reports.

    Args:
        script: the script's path.
        args: its arguments.
        output: the folder of the combined reports (instance K's are in ``instance-K``).
        instances / replicas / ipus_per_replica: the job, as ``poprun --num-instances
            --num-replicas --ipus-per-replica`` gives it.
        options: further ``ipusim run`` options for every instance (``--system``,
            ``--wall-time``).
        stdout / stderr: where the tagged lines go (default: ``sys.stdout`` / ``sys.stderr``).

    Raises:
        ConfigurationError: the job's numbers do not fit together.
    """
    check_job(instances, replicas, ipus_per_replica)
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    output = Path(output)
    for old in output.glob("instance-*"):
        if old.is_dir():
            shutil.rmtree(old)
    lock = threading.Lock()
    processes, pumps = [], []
    exchange = Path(tempfile.mkdtemp(prefix="ipusim-instances-"))
    for k in range(instances):
        environment = instance_environment(k, instances, replicas, ipus_per_replica)
        environment[EXCHANGE_ENVIRONMENT] = str(exchange)
        process = _launch(
            Path(script), list(args), output / f"instance-{k}", environment, options or []
        )
        processes.append(process)
        for stream, out, name in (
            (process.stdout, stdout, "stdout"),
            (process.stderr, stderr, "stderr"),
        ):
            pump = threading.Thread(target=_pump, args=(stream, f"[1,{k}]<{name}>:", out, lock))
            pump.start()
            pumps.append(pump)
    try:
        codes = _wait_all(processes, exchange)
    finally:
        shutil.rmtree(exchange, ignore_errors=True)
    for pump in pumps:
        pump.join()
    reports = combine_reports(output, instances)
    failed = [code for code in codes if code]
    return InstancesResult(output, tuple(reports), failed[0] if failed else 0)


def _wait_all(processes: list[subprocess.Popen[str]], exchange: Path) -> list[int]:
    """Every process's exit code; once one fails, the others stop waiting for it at their next
    cross-replica reduction."""
    codes: list[int | None] = [None] * len(processes)
    while any(code is None for code in codes):
        for i, process in enumerate(processes):
            if codes[i] is None:
                codes[i] = process.poll()
                if codes[i]:
                    (exchange / ABORT_FILE).touch()
        time.sleep(0.02)
    return [int(code or 0) for code in codes]


def combine_reports(output: Path, instances: int) -> list[Path]:
    """Write ``<output>/NN-name`` for each program instance 0 reported (see the module doc)."""
    clear_old_reports(output)
    combined = []
    for first in report_folders(output / "instance-0"):
        folders = [output / f"instance-{k}" / first.name for k in range(instances)]
        figures = [json.loads((f / "report.json").read_text()) for f in folders if f.is_dir()]
        if len(figures) < instances:
            continue  # an instance failed before this program ran: no job-wide report
        slowest = max(range(instances), key=lambda k: figures[k]["seconds"])
        columns = {k: [f[k] for f in figures] for k in ("seconds", "steps", "samples")}
        table = pd.DataFrame({"instance": range(instances), **columns})
        target = output / first.name
        aside = output / f".{first.name}.{os.getpid()}.tmp"
        shutil.rmtree(aside, ignore_errors=True)
        shutil.copytree(folders[slowest], aside)
        chosen = dict(figures[slowest])
        chosen["extra"] = {**chosen.get("extra", {}), "instances": instances, "instance": slowest}
        write_bytes_atomic(
            aside / "report.json",
            (json.dumps(chosen, indent=2, sort_keys=True) + "\n").encode("utf-8"),
        )
        write_bytes_atomic(aside / "instances.csv", table.to_csv(index=False).encode("utf-8"))
        os.replace(aside, target)
        combined.append(target)
    return combined
