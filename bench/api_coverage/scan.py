"""List the TensorFlow / Keras / IPU names public IPU TensorFlow 2 programs use.

Reads Graphcore's public programs (tutorials, feature examples, technical notes, the TF2 user
guides' example files) from git snapshots of their repositories and parses each one (``ast``,
never run): every attribute chain rooted at an imported ``tensorflow`` / ``keras`` /
``ipu_tensorflow_addons`` / ``popdist`` name (``tf.keras.layers.Dense`` ->
``tensorflow.keras.layers.Dense``), every ``from M import N`` (``M.N``) and every module path
imported. Programs written for TF1 (``disable_v2_behavior``, or reaching a top-level ``tf``
name TensorFlow 2 removed, such as ``tf.Session``: :func:`is_tf1_program`) are skipped. It writes
``bench/api_coverage/used_api.json``: the programs (repository, ref, path; not their code) and
one entry per name with the programs using it::

    python bench/api_coverage/scan.py [--mirrors /work/.mirror]

A snapshot folder is ``<mirrors>/<owner>+<name>/repo`` (a bare git directory), as the ``fetch``
tool of the project's sessions leaves them.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

OUT = Path(__file__).resolve().parent / "used_api.json"

#: Roots whose names are recorded (the modules ``ipusim run`` redirects, and popdist).
ROOTS = ("tensorflow", "keras", "ipu_tensorflow_addons", "popdist")

_DOCS = "tensorflow/compiler/plugin/poplar/docs/"
_TUT = "tutorials/"

#: (repository, ref, glob patterns of program files). Tests and test wrappers are left out.
SOURCES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "graphcore/examples",
        "HEAD",
        (
            _TUT + "tutorials/tensorflow2/*.py",
            _TUT + "feature_examples/tensorflow2/*.py",
            _TUT + "simple_applications/tensorflow2/*.py",
            _TUT + "tech_notes_code/*tensorflow2*.py",
        ),
    ),
    ("graphcore/tensorflow", "r2.6/sdk-release-3.4", (_DOCS + "*.py",)),
    (
        "graphcore/tensorflow",
        "r2.5/sdk-release-2.5",
        (
            _DOCS + "keras_tf2_example*.py",
            _DOCS + "keras_porting_example.py",
            _DOCS + "tensorboard_tf2_example.py",
            _DOCS + "distributed_training_example.py",
        ),
    ),
    ("graphcore/keras", "r2.6/sdk-release-3.4", ("keras/ipu/docs/*.py",)),
    ("graphcore/ipu_tensorflow_addons", "r2.6/sdk-release-3.4", ("docs/*.py",)),
)

_SKIP = ("*/tests/*", "*/test_*.py", "*conftest.py", "*docs_test_wrapper.py")
_TF1 = ("disable_v2_behavior", "disable_eager_execution")

#: TF1 names of ``tf``'s top level that TensorFlow 2 removed (they live on under
#: ``tf.compat.v1`` only; S: TensorFlow's "Migrate to TensorFlow 2" guide, and absent from IPU
#: TensorFlow 2.6's API, ``ipu_tf_api.json``). A program reaching one of them from
#: ``import tensorflow`` is TF1 code: under TensorFlow 2 it stops with an AttributeError.
TF1_ONLY = (
    "ConfigProto",
    "InteractiveSession",
    "Session",
    "get_default_graph",
    "get_variable",
    "global_variables_initializer",
    "initialize_all_variables",
    "layers",
    "local_variables_initializer",
    "logging",
    "placeholder",
    "variable_scope",
)


def tf1_only(name: str) -> bool:
    """Whether the scanned ``name`` (``tensorflow.Session``) is a top-level ``tf`` name that only
    TF1 has: one of :data:`TF1_ONLY` or a ``tf.train`` optimizer (``tf.train.MomentumOptimizer``;
    TF2's ``tf.train`` has none)."""
    parts = name.split(".")
    if len(parts) < 2 or parts[0] != "tensorflow":
        return False
    if parts[1] in TF1_ONLY:
        return True
    return len(parts) > 2 and parts[1] == "train" and parts[2].endswith("Optimizer")


def is_tf1_program(text: str) -> bool:
    """A TF1 program: it disables TF2 behaviour, or reaches a name TF2 removed (:func:`tf1_only`)."""
    if any(marker in text for marker in _TF1):
        return True
    names, _modules = scan(text)
    return any(tf1_only(name) for name in names)


@dataclass(frozen=True)
class Program:
    repo: str
    ref: str
    path: str

    @property
    def key(self) -> str:
        return f"{self.repo}@{self.ref}:{self.path}"


def _git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(mirror), *args], check=True, capture_output=True, text=True
    ).stdout


def programs(mirrors: Path) -> list[tuple[Program, str]]:
    """Every program of :data:`SOURCES` with its source text (TF1 programs left out)."""
    found = []
    for repo, ref, patterns in SOURCES:
        mirror = mirrors / repo.replace("/", "+") / "repo"
        for path in _git(mirror, "ls-tree", "-r", "--name-only", ref).splitlines():
            if not any(fnmatch.fnmatch(path, p) for p in patterns):
                continue
            if any(fnmatch.fnmatch(path, p) for p in _SKIP):
                continue
            text = _git(mirror, "show", f"{ref}:{path}")
            if is_tf1_program(text):
                continue
            found.append((Program(repo, ref, path), text))
    return found


def _rooted(module: str) -> bool:
    return module.split(".")[0] in ROOTS


class _Names(ast.NodeVisitor):
    """Collects the names a module's code reaches through the imported TF / Keras names."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.names: set[str] = set()
        self.modules: set[str] = set()

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not _rooted(alias.name):
                continue
            self.modules.add(alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                self.aliases[root] = root

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or node.module is None or not _rooted(node.module):
            return
        self.modules.add(node.module)
        for alias in node.names:
            if alias.name == "*":
                continue
            full = f"{node.module}.{alias.name}"
            self.names.add(full)
            self.aliases[alias.asname or alias.name] = full

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = []
        value: ast.expr = node
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in self.aliases:
            self.names.add(".".join([self.aliases[value.id], *reversed(chain)]))
            return  # the inner chains are prefixes of this one
        self.generic_visit(node)


def scan(text: str) -> tuple[set[str], set[str]]:
    """The (names, imported modules) one program uses."""
    visitor = _Names()
    tree = ast.parse(text)
    for node in ast.walk(tree):  # imports first, wherever they are, then the uses
        if isinstance(node, ast.Import | ast.ImportFrom):
            visitor.visit(node)
    visitor.visit(tree)
    return visitor.names, visitor.modules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args(argv)
    found = programs(args.mirrors)
    used: dict[tuple[str, str], set[int]] = {}
    for index, (_program, text) in enumerate(found):
        names, modules = scan(text)
        for name in names:
            used.setdefault(("name", name), set()).add(index)
        for module in modules:
            used.setdefault(("module", module), set()).add(index)
    entries = [
        {"kind": kind, "name": name, "used_by": sorted(by)}
        for (kind, name), by in sorted(used.items(), key=lambda item: (item[0][1], item[0][0]))
    ]
    listing = {
        "programs": [{"repo": p.repo, "ref": p.ref, "path": p.path} for p, _text in found],
        "names": entries,
    }
    lines = [json.dumps(e, sort_keys=True) for e in listing["names"]]
    programs_text = ",\n".join(json.dumps(p, sort_keys=True) for p in listing["programs"])
    OUT.write_text(
        '{"programs": [\n' + programs_text + '\n],\n"names": [\n' + ",\n".join(lines) + "\n]}\n"
    )
    print(f"{len(found)} programs, {len(entries)} names -> {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
