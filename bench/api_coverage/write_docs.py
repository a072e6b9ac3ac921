"""Write docs/api.md: ipusim's coverage of the TensorFlow / Keras API, name by name.

    PYTHONPATH=. python -m bench.api_coverage.write_docs

``tests/compat/test_api_coverage.py`` renders the same text and fails when the committed
docs/api.md differs (the command above regenerates it). The listings it reads are made in the
TensorFlow environment (``generate.py``) and from Graphcore's public programs (``scan.py``).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

try:
    from bench.api_coverage import api_status as st
except ModuleNotFoundError:  # run as a script: its own folder is on sys.path
    import api_status as st  # type: ignore[no-redef]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
COMMAND = "PYTHONPATH=. python -m bench.api_coverage.write_docs"

#: The Keras modules whose coverage target is 90% (issue 22).
KERAS_CORE = (
    "tf.keras.layers",
    "tf.keras.losses",
    "tf.keras.metrics",
    "tf.keras.optimizers",
    "tf.keras.callbacks",
)


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole else "-"


def _counts(statuses: list[st.Status]) -> tuple[int, int, int]:
    c = Counter(s.status for s in statuses)
    return c[st.COVERED], c[st.NOT_SIMULATED], c[st.MISSING]


def _summary(api: list[st.Status]) -> list[str]:
    modules = sorted({s.module for s in api})
    lines = [
        "| module | names | covered | not simulated | missing | covered or not simulated |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for module in [*modules, "all"]:
        group = api if module == "all" else [s for s in api if s.module == module]
        cov, nsim, miss = _counts(group)
        label = "**all**" if module == "all" else f"[`{module}`](#{_anchor(module)})"
        total = len(group)
        lines.append(f"| {label} | {total} | {cov} | {nsim} | {miss} | {_pct(cov + nsim, total)} |")
    core = [s for s in api if s.module in KERAS_CORE]
    cov, nsim, miss = _counts(core)
    in_ipu = [s for s in core if s.note != st.LATER]
    cov_ipu = sum(s.status == st.COVERED for s in in_ipu)
    lines += [
        "",
        f"tf.keras layers, losses, metrics, optimizers and callbacks together: {cov} of "
        f"{len(core)} covered ({_pct(cov, len(core))}), {nsim} not simulated, {miss} missing; "
        f"of the {len(in_ipu)} of them IPU TensorFlow 2's Keras 2.6 has, {cov_ipu} are covered "
        f"({_pct(cov_ipu, len(in_ipu))}; target 90%).",
        "",
        f"Not simulated because IPU TensorFlow 2 lacks them too (added after TensorFlow / Keras "
        f"2.6; `ipu_tf_api.json` lists what it has): {sum(s.note == st.LATER for s in api)} "
        "names. `tf.summary` is not checked that way (TensorBoard provides it).",
    ]
    return lines


def _anchor(module: str) -> str:
    return module.replace(".", "")


def _names(statuses: list[st.Status], module: str) -> str:
    return ", ".join(f"`{s.name[len(module) + 1 :]}`" for s in statuses) or "none"


def _module_section(module: str, group: list[st.Status]) -> list[str]:
    cov, nsim, miss = _counts(group)
    lines = [
        f"### {module}",
        "",
        f"{len(group)} names: {cov} covered, {nsim} not simulated, {miss} missing.",
        "",
        f"- Covered: {_names([s for s in group if s.status == st.COVERED], module)}",
        f"- Missing: {_names([s for s in group if s.status == st.MISSING], module)}",
    ]
    lacking = [s for s in group if s.lacks]
    if lacking:
        lines.append(
            "- Covered, but without some of the arguments of IPU TensorFlow's (2.6) definition "
            "(TensorFlow 2.21's where the 2.6 source does not show them): "
            + "; ".join(f"`{s.name[len(module) + 1 :]}` ({', '.join(s.lacks)})" for s in lacking)
        )
    not_simulated = [s for s in group if s.status == st.NOT_SIMULATED]
    if not_simulated:
        lines += ["- Not simulated:", ""]
        lines += ["  | name | why, and what to use instead |", "  | --- | --- |"]
        lines += [f"  | `{s.name[len(module) + 1 :]}` | {s.note} |" for s in not_simulated]
    return [*lines, ""]


def _used_section(used: list[st.Status], programs: int) -> list[str]:
    cov, nsim, miss = _counts(used)
    total = len(used)
    lines = [
        "## Used by public IPU TensorFlow 2 programs",
        "",
        f"`bench/api_coverage/scan.py` reads {programs} public Graphcore programs (tutorials, "
        "feature examples, technical notes and the TensorFlow 2 / Keras user guides' example "
        "files; `used_api.json` lists them by repository and path) and lists every TensorFlow, "
        "Keras, IPU and popdist name and module path they use.",
        "",
        f"{total} names and module paths: {cov} covered ({_pct(cov, total)}), {nsim} not "
        f"simulated, {miss} missing. Programs whose every name and module path is covered: "
        f"{programs - len({p for s in used if s.status != st.COVERED for p in s.used_by})} "
        f"of {programs} (a covered name may still differ in behaviour; this counts names).",
        "",
    ]
    missing = sorted(
        (s for s in used if s.status != st.COVERED), key=lambda s: (-len(s.used_by), s.name)
    )
    if missing:
        lines += [
            "| still missing | kind | status | programs | e.g. |",
            "| --- | --- | --- | ---: | --- |",
        ]
        for s in missing:
            lines.append(
                f"| `{s.name}` | {s.module} | {s.status} | {len(s.used_by)} | {s.used_by[0]} |"
            )
    return [*lines, ""]


def render() -> str:
    """The text of docs/api.md, from the committed listings and the ipusim being run."""
    api = st.tf_api_statuses()
    used = st.used_statuses()
    source = json.loads(st.TF_API.read_text())["source"]
    lines = [
        "# ipusim and the TensorFlow / Keras API",
        "",
        f"<!-- generated by `{COMMAND}`; tests/compat/test_api_coverage.py checks it -->",
        "",
        "Every public name of the TensorFlow modules IPU TensorFlow 2 programs use, listed from "
        f"TensorFlow {source['tensorflow']} and tf-keras {source['tf_keras']} (the Keras 2 of "
        "IPU TensorFlow) by `bench/api_coverage/generate.py`, with what ipusim does with it "
        "under `ipusim run` (`import tensorflow as tf`, `from tensorflow import keras`, "
        "`import keras`):",
        "",
        "- **covered**: the name resolves in ipusim's compatibility namespaces;",
        "- **not simulated**: ipusim deliberately does not provide it; the reason and what to "
        "use instead come from `ipusim/compat/not_simulated.py` (a name that resolves counts as "
        "covered even if that table lists it);",
        "- **missing**: not there yet, though IPU TensorFlow 2 has it. Using it raises `ipusim.errors.NotSimulatedError` (an "
        "`AttributeError`) or, for a module path or a `from M import N`, "
        "`NotSimulatedModuleError` (a `ModuleNotFoundError`), naming it.",
        "",
        "## Summary",
        "",
        *_summary(api),
        "",
        *_used_section(used, st.program_count()),
        "## By module",
        "",
    ]
    for module in sorted({s.module for s in api}):
        lines += _module_section(module, [s for s in api if s.module == module])
    stale = st.stale_entries()
    if stale:
        lines += [
            "## Stale entries of the not-simulated table",
            "",
            "These resolve now; remove them from `ipusim/compat/not_simulated.py`: "
            + ", ".join(f"`{name}`" for name in stale),
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    DOCS.write_text(render())
    print(f"wrote {DOCS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
