"""The import graph of realtime/, viz/ and trackers/: imports only go down, and no circles.

Every `import` and `from ... import` is read with `ast`, wherever it sits (module level,
inside functions, relative or absolute). One module is one `.py` file (a package is its
`__init__.py`); `from a.b import c` is an arrow to `a.b.c` when that is a module, else to
`a.b` (as import-linter draws it). Importing `a.b.c` also runs the packages `a` and `a.b`,
so it adds arrows to those too, unless the importer sits inside them (then they are
already running): that is how `tasks -> models.archs` closed a circle through
`models/__init__ -> models.loading -> tasks`.

Layers, read from above only:
- `realtime/models/`, `viz/` and `trackers/` are below the rest of `realtime/`: no arrow
  from them into another `realtime` module ...
- ... except the foundation layer, `FOUNDATION` (the errors, the package data, the `Frame`
  contract and the tracks record declared on it with the face's names, and the `realtime`
  package's own `__init__` that importing any of them runs), which imports nothing else of
  ours, so anything may import it.
- The outputs (`realtime.outputs`, the rule every file writer follows) are above the models:
  a model is tensors in and out, and what writes a file (`realtime.export_model` for ONNX)
  sits above both.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterable, Optional

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("realtime", "viz", "trackers")
LOWER = ("realtime.models", "viz", "trackers")
# record: the tracks file's fields, declared on the Frame contract with the face's names
FOUNDATION = ("realtime.errors", "realtime.data", "realtime.frames", "realtime.record", "realtime.json_fields",
              "realtime.expressions")


def _inside(module: str, packages: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def find_modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of `packages` under `root`."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _nearest(name: str, modules: dict[str, Path]) -> Optional[str]:
    """`name` itself when it is one of ours, else its closest enclosing module of ours."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (anywhere in the file)."""
    modules = find_modules(root, packages)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                stem = ".".join(part for part in (base, node.module) if part)
                targets = [f"{stem}.{alias.name}" for alias in node.names]
            for target in targets:
                found = _nearest(target, modules)
                while found:
                    if found != name and not _inside(name, [found]):
                        graph[name].add(found)
                    found = found.rpartition(".")[0]
    return graph


def upward_arrows(graph: dict[str, set[str]], lower: Iterable[str] = LOWER,
                  foundation: Iterable[str] = FOUNDATION, top: str = "realtime") -> list[str]:
    """'a -> b' for every arrow from a lower package into another `top` module that is
    neither in that lower package nor in the foundation layer (nor `top`'s `__init__`)."""
    lower, foundation = tuple(lower), tuple(foundation)
    arrows = []
    for source, targets in sorted(graph.items()):
        home = next((p for p in lower if _inside(source, [p])), None)
        if home is None:
            continue
        arrows += [f"{source} -> {t}" for t in sorted(targets)
                   if _inside(t, [top]) and t != top and not _inside(t, [home, *foundation])]
    return arrows


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Every import circle, as the set of modules that reach each other (the strongly
    connected components of more than one module; Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = set()
            while not component or module not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(component)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found, key=sorted)


# ----------------------------------------------------------------------------- the product


def test_models_viz_and_trackers_import_nothing_above_them():
    graph = import_graph(REPO, PACKAGES)
    assert "realtime.models.loading" in graph and "viz.compose" in graph and "trackers.identity" in graph
    assert graph["realtime.tasks"] >= {"realtime.models.registry", "viz.panes"}  # the table reads them from above
    assert upward_arrows(graph) == []


def test_the_models_stay_below_the_outputs():
    """The ONNX file is written above the models (realtime.export_model), which hold only the graph."""
    graph = import_graph(REPO, PACKAGES)
    assert graph["realtime.export_model"] >= {"realtime.outputs", "realtime.models.onnx_export"}
    assert {m for m, targets in graph.items() if _inside(m, LOWER) and "realtime.outputs" in targets} == set()
    back = {"realtime.models.onnx_export": {"realtime.outputs"}}  # the arrow the rules refuse, should it come back
    assert upward_arrows(back) == ["realtime.models.onnx_export -> realtime.outputs"]


def test_the_foundation_layer_imports_nothing_else_of_ours():
    graph = import_graph(REPO, PACKAGES)
    assert graph["realtime"] == set()
    for module, targets in graph.items():
        if _inside(module, FOUNDATION):
            assert {t for t in targets if not _inside(t, FOUNDATION)} == set(), module


def test_no_import_circles():
    assert circles(import_graph(REPO, PACKAGES)) == []


# ----------------------------------------------------------------------------- the checker can fail


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_checker_finds_upward_imports_anywhere_and_circles(tmp_path):
    _write(tmp_path, {
        "realtime/__init__.py": "",
        "realtime/errors.py": "",
        "realtime/tasks.py": "from realtime.models import heads\nfrom viz import maps\n",
        "realtime/run.py": "import realtime.tasks\n",
        "realtime/models/__init__.py": "from .heads import Head\n",
        "realtime/models/heads.py": "from ..errors import UserError\n"  # relative, into the foundation: allowed
                                    "def load():\n    from .. import tasks\n",  # relative, in a function: upward
        "viz/__init__.py": "",
        "viz/maps.py": "class Pane:\n    def rows(self):\n        import realtime.run as r\n",  # in a method: upward
        "trackers/__init__.py": "",
        "trackers/a.py": "from trackers.b import f\n",
        "trackers/b.py": "from . import a\n",  # a -> b -> a: a circle, relative on one side
    })
    graph = import_graph(tmp_path, PACKAGES)
    assert graph["realtime.models"] == {"realtime.models.heads"}
    assert graph["realtime.models.heads"] == {"realtime.errors", "realtime.tasks"}
    assert upward_arrows(graph) == ["realtime.models.heads -> realtime.tasks", "viz.maps -> realtime.run"]
    # tasks -> models (package) -> models.heads -> tasks, and tasks -> viz.maps -> run -> tasks: one knot
    assert circles(graph) == [{"realtime.models", "realtime.models.heads", "realtime.run", "realtime.tasks", "viz.maps"},
                              {"trackers.a", "trackers.b"}]


def test_a_circle_across_packages_is_found(tmp_path):
    _write(tmp_path, {
        "realtime/__init__.py": "",
        "realtime/tasks.py": "from viz.compose import Layers\n",
        "viz/__init__.py": "",
        "viz/compose.py": "def f():\n    from realtime.tasks import all_tasks\n",
        "trackers/__init__.py": "",
    })
    graph = import_graph(tmp_path, PACKAGES)
    assert upward_arrows(graph) == ["viz.compose -> realtime.tasks"]
    assert circles(graph) == [{"realtime.tasks", "viz.compose"}]
    graph["viz.compose"].clear()  # the function-level import gone: no circle left
    assert circles(graph) == [] and upward_arrows(graph) == []


def test_a_circle_through_a_package_init_is_found(tmp_path):
    # the shape the house had: the table imports one model file, whose package imports the loader,
    # which looks the table up inside a function
    _write(tmp_path, {
        "realtime/__init__.py": "",
        "realtime/tasks.py": "from realtime.models.heads import Head\n",
        "realtime/models/__init__.py": "from realtime.models.loading import load_model\n",
        "realtime/models/heads.py": "class Head: ...\n",
        "realtime/models/loading.py": ("from realtime.models import heads\n"
                                       "def load_model():\n    from realtime.tasks import row\n"),
        "viz/__init__.py": "",
        "trackers/__init__.py": "",
    })
    graph = import_graph(tmp_path, PACKAGES)
    assert graph["realtime.tasks"] == {"realtime.models", "realtime.models.heads"}
    assert graph["realtime.models.loading"] == {"realtime.models.heads", "realtime.tasks"}  # its own package is running
    assert circles(graph) == [{"realtime.models", "realtime.models.loading", "realtime.tasks"}]


def test_the_sinks_only_encode_they_import_no_rig_or_tracker():
    """VMC/OSC senders, the tracks writer and the video sink encode what a frame holds: nothing
    under realtime/sinks/ imports the rig math (solvers, face, lifting) or the trackers (filters)."""
    graph = import_graph(REPO, PACKAGES)
    sinks = {module: targets for module, targets in graph.items() if _inside(module, ("realtime.sinks",))}
    assert sinks, "no modules found under realtime/sinks"
    reached = {module: {t for t in targets if _inside(t, ("realtime.rig", "trackers", "realtime.stages"))}
               for module, targets in sinks.items()}
    assert reached == {module: set() for module in sinks}
