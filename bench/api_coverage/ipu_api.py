"""List the public API of IPU TensorFlow 2 itself (TensorFlow 2.6 and Keras 2.6 of SDK 3.4).

The names ``generate.py`` lists come from TensorFlow 2.21 and tf-keras 2.21; many were added
after 2.6, so no IPU program can use them. This script reads the export decorators in
Graphcore's sources (``@tf_export("math.add", "add", v1=[...])`` in graphcore/tensorflow,
``@keras_export("keras.layers.Dense")`` in graphcore/keras, both at ``r2.6/sdk-release-3.4``;
parsed with ``ast``, never run), and the endpoints of the generated ops
(``tensorflow/core/api_def/python_api``), and writes ``bench/api_coverage/ipu_tf_api.json``: the sorted
TensorFlow 2 names (``tf.math.add``), Keras names (``tf.keras.layers.Dense``) and TensorFlow 1
names (``tf.compat.v1.train.AdamOptimizer``) of that release, and the named parameters of the
exported functions and classes (``__init__``) where the source shows them::

    python bench/api_coverage/ipu_api.py [--mirrors /work/.mirror]

``tf.summary`` comes from TensorBoard, not from these sources, so it is not listed (the
coverage leaves that module unchecked).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import MODULES  # noqa: E402  (this folder's listing of the modules)

OUT = Path(__file__).resolve().parent / "ipu_tf_api.json"
REF = "r2.6/sdk-release-3.4"


#: TensorFlow 2.6 modules the scan cannot see: aliases of the Keras ones made by TensorFlow's
#: API generator (tf.losses is tf.keras.losses, ... as in TensorFlow 2.x's API docs).
ALIASES = {"tf.initializers", "tf.losses", "tf.metrics", "tf.optimizers"}


def _sources(mirror: Path, ref: str, pattern: str, marker: str) -> list[str]:
    """The text of every file matching ``pattern`` at ``ref`` that mentions ``marker``."""
    git = ["git", "--git-dir", str(mirror)]
    paths = subprocess.run(
        [*git, "grep", "-l", marker, ref, "--", pattern], capture_output=True, text=True
    ).stdout.split()
    return _read_all(mirror, paths)  # git grep prints "<ref>:<path>", an object name


def _read_all(mirror: Path, objects: list[str]) -> list[str]:
    """The text of each ``<ref>:<path>`` object, read by one ``git cat-file --batch``."""
    proc = subprocess.run(
        ["git", "--git-dir", str(mirror), "cat-file", "--batch"],
        input="\n".join(objects).encode() + b"\n",
        capture_output=True,
        check=True,
    )
    out, data, pos = [], proc.stdout, 0
    for _ in objects:
        header_end = data.index(b"\n", pos)
        size = int(data[pos:header_end].split()[2])
        out.append(data[header_end + 1 : header_end + 1 + size].decode("utf-8", "replace"))
        pos = header_end + 1 + size + 1
    return out


_ENDPOINT = re.compile(r'endpoint\s*\{\s*name:\s*"([^"]+)"(\s*deprecation_version:\s*(\d+))?')
_OP = re.compile(r'graph_op_name:\s*"([^"]+)"')
_HIDDEN = re.compile(r"visibility:\s*(HIDDEN|SKIP)")


def _snake(op: str) -> str:
    """TensorFlow's Python name of an op (``BroadcastTo`` -> ``broadcast_to``)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", op).lower()


def _api_defs(mirror: Path, ref: str, folder: str) -> dict[str, str]:
    listing = subprocess.run(
        ["git", "--git-dir", str(mirror), "ls-tree", "--name-only", ref, folder],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    texts = _read_all(mirror, [f"{ref}:{path}" for path in listing])
    return {m.group(1): t for t in texts for m in [_OP.search(t)] if m}


def op_endpoints(mirror: Path, ref: str) -> tuple[set[str], set[str]]:
    """(v2, v1) names of the generated ops (``tf.math.cos``, ``tf.broadcast_to``): the
    python_api api_def's endpoints, else the base_api's, else the op's snake-case name, unless
    hidden (tensorflow/core/api_def/README.md); endpoints deprecated in version 2 are
    TensorFlow 1 only. Over-inclusion only makes a name count as missing, never as later."""
    base = _api_defs(mirror, ref, "tensorflow/core/api_def/base_api/")
    python = _api_defs(mirror, ref, "tensorflow/core/api_def/python_api/")
    v2: set[str] = set()
    v1: set[str] = set()
    for op in set(base) | set(python):
        texts = [t for t in (python.get(op), base.get(op)) if t is not None]
        if _HIDDEN.search(texts[0]):
            continue
        endpoints = next((_ENDPOINT.findall(t) for t in texts if _ENDPOINT.search(t)), None)
        for name, _, version in endpoints or [(_snake(op), "", "")]:
            v1.add(name)
            if version != "2":
                v2.add(name)
    return v2, v1


def _strings(nodes: list[ast.expr]) -> list[str]:
    out = []
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.List | ast.Tuple):
            out.extend(_strings(list(node.elts)))
    return out


def _def_params(node: ast.FunctionDef | ast.ClassDef) -> list[str]:
    """The named parameters of a function, or of a class's ``__init__`` (without ``self``)."""
    if isinstance(node, ast.ClassDef):
        init = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
        if not init:
            return []
        node = init[0]
    args = node.args
    names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    return [n for n in names if n not in ("self", "cls")]


def exports(text: str, decorator: str) -> tuple[set[str], set[str], dict[str, list[str]]]:
    """(v2 names, v1 names, the named parameters of the decorated functions and classes) a
    source file exports with ``decorator(...)``."""
    v2: set[str] = set()
    v1: set[str] = set()
    params: dict[str, list[str]] = {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return v2, v1, params
    decorated = {
        id(call): node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
        for call in node.decorator_list
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name != decorator:
            continue
        positional = _strings(list(node.args))
        v1_given = [k for k in node.keywords if k.arg == "v1"]
        v2.update(positional)
        v1.update(_strings([v1_given[0].value]) if v1_given else positional)
        if id(node) in decorated:
            for exported in positional:
                params[exported] = _def_params(decorated[id(node)])
    return v2, v1, params


def _listed(exported: set[str]) -> list[str]:
    """The exported names under the modules ``generate.py`` lists (``tf.math.add``), and the
    submodules of those modules (``tf.data``, a prefix of exported names)."""
    modules = set(MODULES) | {"tf.compat.v1.train"}
    keep = {n for n in exported if n.rpartition(".")[0] in modules}
    for name in exported:
        parts = name.split(".")
        for end in range(2, len(parts)):
            prefix = ".".join(parts[:end])
            if prefix.rpartition(".")[0] in modules:
                keep.add(prefix)
    return sorted(keep)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args(argv)
    tf_mirror = args.mirrors / "graphcore+tensorflow" / "repo"
    keras_mirror = args.mirrors / "graphcore+keras" / "repo"
    v2: set[str] = set()
    v1: set[str] = set()
    params: dict[str, list[str]] = {}
    for text in _sources(tf_mirror, REF, "tensorflow/*.py", "tf_export"):
        names2, names1, found = exports(text, "tf_export")
        v2 |= {"tf." + n for n in names2}
        v1 |= {"tf.compat.v1." + n for n in names1}
        params.update({"tf." + n: p for n, p in found.items()})
    ops2, ops1 = op_endpoints(tf_mirror, REF)
    v2 |= {"tf." + n for n in ops2}
    v1 |= {"tf.compat.v1." + n for n in ops1}
    for text in _sources(keras_mirror, REF, "keras/*.py", "keras_export"):
        names2, _, found = exports(text, "keras_export")  # keras.X, and aliases (losses.X)
        v2 |= {"tf." + n for n in names2}
        params.update({"tf." + n: p for n, p in found.items()})
    names = _listed(v2 | v1 | ALIASES)
    listed = set(names)
    kept = {n: p for n, p in sorted(params.items()) if n in listed and p}
    OUT.write_text(
        json.dumps({"source": {"graphcore/tensorflow": REF, "graphcore/keras": REF}})[:-1]
        + ',\n"names": [\n'
        + ",\n".join(json.dumps(n) for n in names)
        + '\n],\n"params": {\n'
        + ",\n".join(f"{json.dumps(n)}: {json.dumps(p)}" for n, p in kept.items())
        + "\n}}\n"
    )
    print(f"{len(v2)} TF2 / Keras names, {len(v1)} TF1 names -> {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
