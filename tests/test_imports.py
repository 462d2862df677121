"""cpustudy's import rules, read from its source (AST: nothing is imported; imports inside functions count):

* no two modules import each other: data flows one way;
* a room (a subpackage of cpustudy, or one of its top-level modules) imports only the rooms ``MAY_IMPORT``
  gives it, and the rooms have an order: an import never runs back up it;
* no module reaches into another module's private (``_name``) functions or names;
* every third-party package imported anywhere in cpustudy is declared in pyproject.toml.
"""

import ast
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "cpustudy"


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _from_base(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The module a ``from X import ...`` in module ``name`` imports from, relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    base = node.module or ""
    if node.level:
        base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
    return base


def _import_sites(name: str, path: Path, known: set[str]) -> list[tuple[str, ast.stmt]]:
    """Each cpustudy module ``name`` imports anywhere in it, with the statement that imports it (``from pkg
    import mod`` counts as ``pkg.mod``, ``from mod import thing`` as ``mod``)."""
    out: list[tuple[str, ast.stmt]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.extend((a.name, node) for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(name, path, node)
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append((sub if sub in known else base, node))
    return [(m, node) for m, node in out if m in known and m != name]


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The cpustudy modules ``name`` imports anywhere in it (``from pkg import mod`` counts as ``pkg.mod``)."""
    return {m for m, _ in _import_sites(name, path, known)}


def test_no_two_modules_import_each_other():
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(name, path, known) for name, path in modules.items()}
    both = sorted({tuple(sorted((a, b))) for a, deps in graph.items() for b in deps if a in graph.get(b, ())})
    assert both == [], f"modules that import each other: {both}"


# --- Rooms ------------------------------------------------------------------------------------------------

#: The rooms each room may import (a room always imports its own modules). A room is a subpackage of cpustudy
#: (with its own subpackages: ``cli.commands`` is in ``cli``, ``store.importers`` in ``store``) or one of
#: cpustudy's top-level modules; ``cpustudy`` is the package's own ``__init__`` (``__version__``).
#: Listed from the bottom up: a room may import only rooms listed before it, so an import never runs back up.
#: This is the graph as the code has it; a new edge is a decision about the design, made here, in the open.
MAY_IMPORT: dict[str, set[str]] = {
    # The bottom: standard library only.
    "cpustudy": set(),
    "errors": set(),
    "cache": set(),
    "precision": set(),
    # Small shared modules.
    "names": {"errors"},
    # One identity for a configuration, and its views (standard library and precision only).
    "identity": {"precision"},
    "targets": {"errors"},
    # Every threshold of a comparison (standard library only): read by analysis, decision and measure alike.
    "rules": set(),
    "provenance": {"cpustudy"},
    "prices": {"errors"},
    "store": {"identity", "errors", "precision", "provenance"},
    "workloads": {"cache", "errors", "names", "provenance"},
    # Runs under any build's interpreter: never the parent's side (measure, store, analysis, report).
    "worker": {"cpustudy", "cache", "identity", "precision", "targets", "workloads"},
    # The machine and the builds; starts workers (their protocol), names a CPU's cloud families (prices).
    "environment": {"cache", "errors", "names", "prices", "provenance", "worker"},
    "analysis": {"identity", "environment", "errors", "names", "precision", "prices", "provenance", "rules", "store",
                 "targets", "workloads"},
    # How compare decides: pure functions of what is measured (the prediction below it, in analysis).
    "decision": {"analysis", "rules"},
    "report": {"identity", "cpustudy", "analysis", "decision", "errors", "names", "prices", "provenance", "store"},
    # Measuring answers from the analysis (``compare``, ``tune``); it never reaches up into the cloud.
    "measure": {"identity", "analysis", "cache", "decision", "environment", "errors", "names", "precision", "prices", "rules",
                "store", "targets", "worker", "workloads"},
    "cloud": {"identity", "cache", "environment", "errors", "measure", "names", "prices", "provenance", "store", "workloads"},
    # ``compare --simulate``: the real comparison measured against played runs, trial after trial, beside the truth.
    "rehearsal": {"analysis", "decision", "errors", "measure", "precision", "rules", "store", "targets", "worker"},
    # The top: the command line and ``python -m cpustudy``.
    "cli": {"identity", "cpustudy", "analysis", "cloud", "decision", "environment", "errors", "measure", "names", "precision",
            "provenance",
            "prices", "rehearsal", "report", "rules", "store", "targets", "worker", "workloads"},
    "__main__": {"cli"},
}


def _room(module: str) -> str:
    """``cpustudy.measure.compare`` -> ``measure``; ``cpustudy.errors`` -> ``errors``; ``cpustudy`` -> ``cpustudy``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO)}:{getattr(node, 'lineno', '?')}"


def test_the_rooms_have_an_order():
    """Each room may import only rooms listed before it in ``MAY_IMPORT``: the table itself has no cycle."""
    seen: set[str] = set()
    wrong = []
    for room, allowed in MAY_IMPORT.items():
        later = sorted(allowed - seen)
        if later:
            wrong.append(f"{room!r} may import {later}, listed after it (or not at all)")
        seen.add(room)
    assert wrong == [], "MAY_IMPORT runs back up:\n" + "\n".join(wrong)


def test_every_room_is_in_the_table():
    rooms = {_room(m) for m in _modules()}
    assert sorted(rooms - set(MAY_IMPORT)) == [], "rooms missing from MAY_IMPORT: add each with the rooms it may import"
    assert sorted(set(MAY_IMPORT) - rooms) == [], "MAY_IMPORT names rooms cpustudy no longer has"


def test_rooms_import_only_what_they_may():
    modules = _modules()
    known = set(modules)
    wrong = []
    for name, path in sorted(modules.items()):
        room = _room(name)
        allowed = MAY_IMPORT.get(room, set())
        for target, node in _import_sites(name, path, known):
            other = _room(target)
            if other != room and other not in allowed:
                wrong.append(f"{_where(path, node)}: {name} imports {target} (`{ast.unparse(node)}`): room {room!r} "
                             f"may import only {sorted(allowed)}, not {other!r}")
    assert wrong == [], ("imports against the rooms' order (MAY_IMPORT in tests/test_imports.py); move the code down, "
                         "or pass what it needs in from above:\n" + "\n".join(wrong))


# --- Private names ----------------------------------------------------------------------------------------

#: Known reach-ins into another module's private names, as (module, what it reaches), tolerated until they
#: are gone; this set should only shrink, to empty. The test fails on a new one, and on an entry that no
#: longer occurs (remove it here).
KNOWN_PRIVATE_REACH_INS: set[tuple[str, str]] = set()  # none left: keep it so

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def _own_nodes(scope: ast.AST):
    """The nodes of one scope, not descending into the functions, lambdas and classes defined in it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _SCOPES):
            todo.extend(ast.iter_child_nodes(node))


def _reach_ins(name: str, path: Path, known: set[str]) -> list[tuple[str, str]]:
    """``(module, where)`` for each private name of another cpustudy module that ``name`` reaches: ``from
    cpustudy.x import _y``, or ``alias._y`` where ``alias`` is bound, in this scope or an enclosing one, by an
    import of a cpustudy module (``import cpustudy.x as alias``, ``from cpustudy import x as alias``)."""
    found: list[tuple[str, str]] = []

    def module_of(node: ast.expr, env: dict[str, str]) -> str | None:
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Attribute):
            outer = module_of(node.value, env)
            if outer and f"{outer}.{node.attr}" in known:
                return f"{outer}.{node.attr}"
        return None

    def visit(scope: ast.AST, outer: dict[str, str]) -> None:
        nodes = list(_own_nodes(scope))
        env = dict(outer)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            params = scope.args
            for arg in [*params.posonlyargs, *params.args, *params.kwonlyargs, params.vararg, params.kwarg]:
                if arg is not None:
                    env.pop(arg.arg, None)  # a parameter hides a module of the same name
        for node in nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in known and a.asname:
                        env[a.asname] = a.name
                    elif a.name.split(".")[0] in known and not a.asname:
                        env[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = _from_base(name, path, node)
                if base not in known:
                    continue
                for a in node.names:
                    if f"{base}.{a.name}" in known:
                        env[a.asname or a.name] = f"{base}.{a.name}"
                    if _private(a.name) and base != name:
                        found.append((f"{base}.{a.name}", f"{_where(path, node)} `{ast.unparse(node)}`"))
        for node in nodes:
            if isinstance(node, ast.Attribute) and _private(node.attr):
                target = module_of(node.value, env)
                if target and target != name:
                    found.append((f"{target}.{node.attr}", f"{_where(path, node)} `{ast.unparse(node)}`"))
        for node in nodes:
            if isinstance(node, _SCOPES):
                # a class's own names are not seen by its methods
                visit(node, outer if isinstance(scope, ast.ClassDef) else env)

    visit(ast.parse(path.read_text()), {})
    return found


def test_no_module_reaches_into_another_modules_private_names():
    modules = _modules()
    known = set(modules)
    found: dict[tuple[str, str], list[str]] = {}
    for name, path in sorted(modules.items()):
        for target, where in _reach_ins(name, path, known):
            found.setdefault((name, target), []).append(where)
    new = [f"{where}: {name} uses {target}, private to {target.rsplit('.', 1)[0]}"
           for (name, target), wheres in sorted(found.items()) if (name, target) not in KNOWN_PRIVATE_REACH_INS
           for where in wheres]
    assert new == [], ("a module reaches into another's private names: make the name public where it is defined "
                       "(it is then that module's interface), or move the code:\n" + "\n".join(new))
    gone = sorted(KNOWN_PRIVATE_REACH_INS - set(found))
    assert gone == [], f"no longer occur: remove them from KNOWN_PRIVATE_REACH_INS: {gone}"


# --- Third-party packages ---------------------------------------------------------------------------------

#: Import names whose distribution on PyPI is named otherwise.
DISTRIBUTION_OF = {"cpuinfo": "py-cpuinfo", "sky": "skypilot", "pynvml": "nvidia-ml-py"}

#: Imported but not cpustudy's to install: the framework of a measured build, installed in that build's own
#: environment by its recipe (``builds/recipes/torch.toml``) or already in the interpreter (``torch-here``),
#: and imported only by the worker that runs under it. Import name -> the only room that may import it.
BROUGHT_BY_A_BUILD = {"torch": "worker"}


def _normalize(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _declared() -> set[str]:
    """The distributions pyproject.toml declares for cpustudy's own code: its dependencies and every extra but
    ``test`` (which installs tools for the tests, not for cpustudy)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = list(project.get("dependencies", []))
    for extra, reqs in project.get("optional-dependencies", {}).items():
        if extra != "test":
            requirements.extend(reqs)
    return {_normalize(re.split(r"[^A-Za-z0-9._-]", r.strip(), maxsplit=1)[0]) for r in requirements}


def _third_party() -> dict[str, list[tuple[str, str]]]:
    """Each third-party top-level module imported anywhere in cpustudy -> (module, where) of its imports."""
    out: dict[str, list[tuple[str, str]]] = {}
    for name, path in sorted(_modules().items()):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top not in sys.stdlib_module_names and top != "cpustudy":
                    out.setdefault(top, []).append((name, _where(path, node)))
    return out


def test_every_third_party_import_is_declared():
    declared = _declared()
    missing: list[str] = []
    for top, sites in sorted(_third_party().items()):
        if top in BROUGHT_BY_A_BUILD:
            outside = [where for name, where in sites if _room(name) != BROUGHT_BY_A_BUILD[top]]
            missing.extend(f"{where}: {top} (brought by a build) is imported outside {BROUGHT_BY_A_BUILD[top]}"
                           for where in outside)
            continue
        distribution = DISTRIBUTION_OF.get(top, top)
        if _normalize(distribution) not in declared:
            missing.append(f"{top} (distribution {distribution!r}), imported at {', '.join(w for _, w in sites)}")
    assert missing == [], ("third-party imports pyproject.toml does not declare (add them to [project] dependencies, "
                           "or an extra; DISTRIBUTION_OF maps import names to distributions):\n" + "\n".join(missing))
