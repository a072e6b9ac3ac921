"""``run_sweep``: run a study's configurations, keep each result on disk, return one table.

Each finished configuration is written atomically to ``OUTPUT/configs/<key>.json`` (see
:mod:`ipusim.sweep.task` for the record), where ``<key>`` is :func:`~ipusim.sweep.config_key`.
A sweep that is stopped (killed, interrupted, a machine lost) and started again with the same
output folder reads the configurations that have a result file and runs only the others.
Configurations whose run raised an error (other than out-of-memory) are run again.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from ipusim._files import write_text_atomic
from ipusim.sweep import pools
from ipusim.sweep.errors import SweepError, WorkerDied
from ipusim.sweep.interrupts import sigterm_raises
from ipusim.sweep.outdir import CONFIGS_FOLDER, claim_output
from ipusim.sweep.printing import progress_line
from ipusim.sweep.registry import (
    Workload,
    config_validator,
    resolve_workload,
    warm_up_of,
    workload_label,
)
from ipusim.sweep.study import Study, canonical_json, describe_config
from ipusim.sweep.task import (
    RECORD_FORMAT,
    RECORD_VERSION,
    STATUS_COLUMNS,
    error_record,
    execute,
)

__all__ = [
    "as_study",
    "check_configs",
    "load_results",
    "result_path",
    "results_frame",
    "run_sweep",
]

#: Invalid configurations listed in full in the error before the rest are counted.
_SHOWN_PROBLEMS = 5


def as_study(
    study_or_configs: Study
    | Mapping[str, Any]
    | Sequence[Mapping[str, Any]]
    | str
    | os.PathLike[str],
    workload: str | Workload | None = None,
) -> Study:
    """A :class:`Study` from a study, a study file, a study dict or a list of configurations.

    Args:
        study_or_configs: what to run.
        workload: replaces the study's workload; needed for a list of configurations.

    Raises:
        SweepError: if a list of configurations comes without a workload, or the study is invalid.
    """
    if isinstance(study_or_configs, Study):
        study = study_or_configs
    elif isinstance(study_or_configs, str | os.PathLike):
        study = Study.from_toml(study_or_configs)
    elif isinstance(study_or_configs, Mapping):
        data = dict(study_or_configs)
        if workload is not None:
            data["workload"] = workload
        return Study.from_dict(data)
    elif isinstance(study_or_configs, Sequence):
        if workload is None:
            raise SweepError(
                "run_sweep: a list of configurations needs workload= (a registered name, "
                "'module:function' or a function)"
            )
        # mypy 2.4 narrows isinstance(..., Sequence) from the declared type, letting str back
        # in; a str took the str | os.PathLike branch above.
        return Study.from_configs(workload, study_or_configs)  # type: ignore[arg-type]
    else:
        raise SweepError(
            "run_sweep: expected a Study, a study file path, a study dict or a list of "
            f"configuration dicts; got {type(study_or_configs).__name__}"
        )
    if workload is not None:
        study = Study(workload, study.configs, study.name, study.source)
    return study


def result_path(output: str | os.PathLike[str], key: str) -> Path:
    """The result file of the configuration with ``key`` in a sweep's output folder."""
    return Path(output) / CONFIGS_FOLDER / f"{key}.json"


def _read_record(path: Path) -> dict[str, Any] | None:
    """The record in ``path``, or None if the file is missing or not a result file."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"note: ignoring unreadable result file {str(path)!r} ({exc})", file=sys.stderr)
        return None
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        why = f"{str(path)!r}: not a sweep result file"
    elif record.get("version") != RECORD_VERSION:
        why = (
            f"{str(path)!r}: result format version {record.get('version')}, this ipusim writes "
            f"{RECORD_VERSION}"
        )
    elif (problem := _record_problem(path, record)) is not None:
        why = f"damaged result file {str(path)!r}: {problem}"
    else:
        return record
    print(f"note: ignoring {why}", file=sys.stderr)
    return None


#: The type of every field of a result record (see ipusim.sweep.task).
_RECORD_FIELDS = {
    "key": str,
    "workload": str,
    "config": dict,
    "row": dict,
    "oom": bool,
    "oom_reason": str,
    "error": str,
}


def _record_problem(path: Path, record: dict[str, Any]) -> str | None:
    """What is wrong with a result record's fields (None when nothing is); its configuration then
    runs again."""
    for field, kind in _RECORD_FIELDS.items():
        if not isinstance(record.get(field), kind):
            return f"field {field!r} is {record.get(field)!r}, not a {kind.__name__}"
    if record["key"] != path.stem:
        return f"field 'key' is {record['key']!r}, but the file is named for {path.stem!r}"
    for name, value in record["row"].items():
        if isinstance(value, dict | list):
            return f"figure {name!r} is {value!r}, not a scalar"
    return None


def load_results(
    study: Study, output: str | os.PathLike[str], workload: str | None = None
) -> dict[int, dict[str, Any]]:
    """The stored records of a study's configurations, by position in the study.

    Args:
        study: the study.
        output: the sweep's output folder.
        workload: the label the records must carry (default: the study's).

    Raises:
        SweepError: if a file holds another configuration (a key collision) or the results of
            another workload.
    """
    label = workload if workload is not None else workload_label(study.workload)
    found: dict[int, dict[str, Any]] = {}
    for index, (config, key) in enumerate(zip(study.configs, study.config_keys())):
        path = result_path(output, key)
        record = _read_record(path)
        if record is None:
            continue
        if record.get("config") != json.loads(json.dumps(config)):
            raise SweepError(
                f"{str(path)!r} holds the result of configuration {record.get('config')!r}, not "
                f"of {config!r}, although both have key {key}. Use another output folder."
            )
        if record.get("workload") != label:
            raise SweepError(
                f"{str(path)!r} holds a result of workload {record.get('workload')!r}, but this "
                f"study runs {label!r}. Use another output folder, or resume=False (--no-resume) "
                "to run every configuration again."
            )
        found[index] = record
    return found


def results_frame(study: Study, records: Mapping[int, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per configuration, in the study's order.

    Columns: the configuration keys (first-seen order), the figures (first-seen order), then
    ``oom``, ``oom_reason``, ``error`` ("" when none) and ``config_key``.
    """
    rows = []
    figure_names: dict[str, None] = {}
    for index in range(len(study)):
        record = records[index]
        row: dict[str, Any] = dict(record["config"])
        row.update(record["row"])
        figure_names.update(dict.fromkeys(record["row"]))
        row.update(
            oom=bool(record["oom"]),
            oom_reason=record["oom_reason"],
            error=record["error"],
            config_key=record["key"],
        )
        rows.append(row)
    columns = list(dict.fromkeys([*study.keys, *figure_names, *STATUS_COLUMNS]))
    return pd.DataFrame(rows, columns=columns)


def check_configs(study: Study, fn: Workload, label: str) -> None:
    """Check every configuration with the workload's ``validate_config``, before any runs.

    Raises:
        SweepError: listing the invalid configurations (grouped by problem) and what is wrong.
    """
    check = config_validator(fn)
    if check is None:
        return
    problems: dict[str, list[int]] = {}
    for index, config in enumerate(study.configs):
        try:
            check(json.loads(json.dumps(config)))
        except (ValueError, TypeError, KeyError) as exc:
            problems.setdefault(str(exc), []).append(index)
    if not problems:
        return
    bad = sum(len(indices) for indices in problems.values())
    lines = []
    for message, indices in list(problems.items())[:_SHOWN_PROBLEMS]:
        first = indices[0]
        which = (
            "every configuration"
            if len(indices) == len(study)
            else f"configs[{first}] ({describe_config(study.configs[first])})"
            + (f" and {len(indices) - 1} more" if len(indices) > 1 else "")
        )
        lines.append(f"  {which}: {message}")
    if len(problems) > _SHOWN_PROBLEMS:
        lines.append(f"  ... and {len(problems) - _SHOWN_PROBLEMS} more problems")
    raise SweepError(
        f"{study.source}: {bad} of {len(study)} configurations cannot run workload {label!r}, "
        "so none was run:\n" + "\n".join(lines)
    )


def _failure(exc: BaseException, config: Mapping[str, Any]) -> BaseException:
    """The exception recorded for a configuration that did not return; a dead worker's names
    the configuration and how to look at the crash."""
    if isinstance(exc, WorkerDied):
        return WorkerDied(
            exc.exitcode,
            f"{exc} while running configuration {canonical_json(config)}; the other "
            "configurations went on. Run this configuration alone with jobs=1 (-j 1) to see "
            "the failure in this process.",
        )
    return exc


def _describe_backend(scheduler: Any, jobs: int) -> str:
    if scheduler is not None:
        return f"on the Dask cluster at {scheduler}" if isinstance(scheduler, str) else "on Dask"
    return "in this process" if jobs == 1 else f"on {jobs} local processes"


def _run_pending(
    study: Study,
    fn: Workload,
    label: str,
    output: Path,
    jobs: int,
    scheduler: Any,
    progress: bool,
    resume: bool,
    out: TextIO,
) -> dict[int, dict[str, Any]]:
    """Run the configurations without a stored result; return every configuration's record."""
    keys = study.config_keys()
    records: dict[int, dict[str, Any]] = {}
    if resume:
        records = {i: r for i, r in load_results(study, output, label).items() if not r["error"]}
    pending = [i for i in range(len(study)) if i not in records]
    task = functools.partial(execute, fn)
    items = [(i, (study.configs[i], keys[i], label)) for i in pending]
    if not items or (scheduler is None and jobs == 1):
        outcomes = pools.run_serial(task, items)
    elif scheduler is not None:
        outcomes = pools.run_dask(task, items, scheduler)
    else:
        pools.check_picklable(fn, f"workload {label!r}")
        # The pool keeps `jobs` workers for later sweeps; this one uses no more than it has tasks.
        outcomes = pools.run_local(task, items, jobs, warm_up_of(fn))
        jobs = min(jobs, len(items))
    if progress:
        print(
            f"sweep: {len(study)} configurations, {len(records)} already in "
            f"{str(output / CONFIGS_FOLDER)!r}, running {len(items)}"
            + (f" {_describe_backend(scheduler, jobs)}" if items else ""),
            file=out,
        )
    done = len(records)
    try:
        for index, ok, value in outcomes:
            config = study.configs[index]
            record = (
                value if ok else error_record(keys[index], label, config, _failure(value, config))
            )
            write_text_atomic(
                result_path(output, keys[index]),
                json.dumps(record, indent=1, allow_nan=True) + "\n",
            )
            records[index] = record
            done += 1
            if progress:
                print(progress_line(done, len(study), record), file=out, flush=True)
    finally:
        outcomes.close()
    return records


def run_sweep(
    study_or_configs: Study
    | Mapping[str, Any]
    | Sequence[Mapping[str, Any]]
    | str
    | os.PathLike[str],
    output: str | os.PathLike[str],
    jobs: int | None = None,
    scheduler: Any = None,
    progress: bool = True,
    resume: bool = True,
    workload: str | Workload | None = None,
    stream: TextIO | None = None,
) -> pd.DataFrame:
    """Run every configuration of a study and return one row per configuration.

    Args:
        study_or_configs: a :class:`Study`, the path of a study TOML file, a study dict, or a
            list of configuration dicts (then ``workload`` is required).
        output: folder for the result files (``output/configs/<key>.json``), created if missing.
        jobs: local worker processes (default: the CPU count). ``1`` runs the configurations one
            after another in this process, which is easiest to debug; a workload may then change
            this process's state (``mlp_timing`` configures and resets the IPU system).
        scheduler: a Dask scheduler address (``"tcp://HOST:PORT"``) or ``distributed.Client``;
            when given, the configurations run on that cluster and ``jobs`` is ignored.
        progress: print a line per finished configuration and a summary on ``stream``.
        resume: read the configurations already in ``output`` instead of running them again
            (except those that raised an error). False runs and overwrites everything.
        workload: replaces the study's workload.
        stream: where progress goes (default stderr).

    Returns:
        A DataFrame in the study's order: the configuration keys, the workload's figures,
        ``oom``, ``oom_reason``, ``error`` and ``config_key`` (see :func:`results_frame`).

    Raises:
        SweepError: for an invalid study or workload, or an output folder holding other results.
    """
    study = as_study(study_or_configs, workload)
    fn = resolve_workload(study.workload)
    label = workload_label(study.workload)
    check_configs(study, fn, label)
    jobs = pools.default_jobs() if jobs is None else jobs
    if scheduler is None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise SweepError(f"jobs must be a positive int (worker processes); got {jobs!r}")
    output = Path(output)
    out = stream if stream is not None else sys.stderr
    with claim_output(output), sigterm_raises():
        records = _run_pending(study, fn, label, output, jobs, scheduler, progress, resume, out)
    frame = results_frame(study, records)
    if progress:
        failed = int((frame["error"] != "").sum())
        oom = int(frame["oom"].sum())
        print(
            f"sweep: {len(frame)} configurations, {oom} out of memory, {failed} failed"
            + (
                f" (see the error column and the tracebacks in {str(output / CONFIGS_FOLDER)!r})"
                if failed
                else ""
            ),
            file=out,
        )
    return frame
