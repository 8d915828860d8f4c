"""The packages' imports point one way (docs/architecture.md): every import of every module,
function-level ones included, read from the source with `ast`."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _package(path: Path, root: Path) -> list[str]:
    """The dotted package a module file under `root` sits in (``app/control/ik.py`` -> ['app', 'control'])."""
    return list(path.resolve().relative_to(root.resolve()).parts)[:-1]


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every module `path` imports, absolute or relative (resolved against its package), at any depth."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                names.add(node.module or "")
                continue
            pkg = _package(path, root)
            base = pkg[:len(pkg) - (node.level - 1)] if node.level > 1 else pkg
            prefix = ".".join(base + ([node.module] if node.module else []))
            if node.module:
                names.add(prefix)
            else:  # `from . import x`: x is a module of the package (or a name in its __init__)
                names.update(f"{prefix}.{a.name}" for a in node.names)
    return names


def _modules(folder: str) -> list[Path]:
    base = ROOT / folder
    return sorted(base.rglob("*.py")) if base.is_dir() else [ROOT / folder]


def _package_modules(package: str) -> list[str]:
    """Every module of app/<package> by name (not the package itself)."""
    return [f"app.{package}.{p.stem}" for p in sorted((ROOT / "app" / package).glob("*.py")) if p.stem != "__init__"]


def _top_modules_except(*allowed: str) -> list[str]:
    """`app` itself, each package of app/ and each top-level module of app/ by name, but `allowed`."""
    names = ["app"] + [f"app.{p.stem}" if p.is_file() else f"app.{p.name}" for p in sorted((ROOT / "app").iterdir())
                       if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()]
    return [n for n in names if n not in allowed]


BENCH_HELPERS = ("fake_openvr", "remote_tools", "openxr_runtime", "monado_remote", "hand_model", "hand_session")
"""Test-support modules the benchmarks share (a scripted SteamVR, a server process seen from outside,
a real OpenXR runtime (Monado) and its scripted remote driver, synthesized hands and a recording
made with them):
they ship with the tests, not in app/."""

# (where, which imports are forbidden there, why)
RULES = [
    ("calibration", ("app", "tests", "bench"), "pure math knows nothing of the application"),
    ("app", ("tests", "bench"), "the application ships without its tests and benchmarks"),
    ("app/control", ("app.gui", "app.core", "app.pipeline", "app.runtime", "app.sessions", "app.streaming", "app.remote",
                     "app.render", "app.replay_render", "app.selfcheck", "app.cli"),
     "the loop and its math sit below every consumer of snapshots"),
    ("app/sim", ("app.gui", "app.core", "app.pipeline", "app.runtime", "app.sessions", "app.streaming", "app.remote",
                 "app.render", "app.replay_render", "app.selfcheck", "app.tracking", "app.cli", "app.control"),
     "the simulation is a device below the loop: it knows nothing of the control package (the scene mirror, a loop "
     "subscriber, is app.control.mirror)"),
    ("app/core", ("app.gui", "app.cli"), "the core process runs without Qt"),
    ("app/pipeline.py", ("app.gui", "app.core", "app.cli"), "one Qt-free session for every front end"),
    ("app/replay_render.py", ("app.gui", "app.core", "app.cli"),
     "re-simulated pictures of a session (a Pipeline and an offscreen renderer) for the CLI's export"),
    ("app/reopening_sub.py", ("app",), "a socket helper below everything that subscribes"),
    ("app/lifecycle.py", ("app",), "the one illegal-transition error, below every state machine"),
    ("app/log_queue.py", ("app",), "non-blocking log handlers, below everything that logs"),
    ("app/frozen.py", ("app",), "read-only arrays for value types, below everything"),
    ("app/finite.py", ("app",), "the one finite-number check, below everything that validates"),
    ("app/pickled_once.py", ("app",), "settings pickled once, below the configuration that uses it"),
    ("app/child_process.py", ("app",), "how the core runs a child process; the child imports it before leaving the "
                                        "scheduling it inherited"),
    ("app/request.py", ("app",), "a request as a typed frozen dataclass, below every process boundary that carries one"),
    ("app/control/snapshot_pickle.py", ("app",), "a tick's snapshot pickled once for the window and the recording process"),
    ("app/streaming/locomotion_mode.py", ("app",), "the planner's locomotion modes, the one list the configuration reads"),
    ("app/sessions", ("app.gui", "app.core", "app.pipeline", "app.cli", "app.runtime", "app.remote", "app.streaming",
                      "app.control.engine", "app.control.loop", "app.control.ik"),
     "sessions are data, read by the front ends; they know the snapshot type, and read joint ranges from the model "
     "file (app.sim), not from the runtime"),
    ("app/streaming", ("app.gui", "app.core", "app.pipeline", "app.cli"), "the stream is fed snapshots"),
    ("app/remote", ("app.gui", "app.core", "app.pipeline", "app.cli", "app.runtime", "app.control.engine"),
     "the remote output sits below the pipeline and beside the engine, which it serves through the ArmsOutput port"),
    ("app/render", ("app.gui", "app.core", "app.pipeline", "app.cli"), "offscreen rendering is Qt-free, below the window"),
    ("app/__init__.py", ("app",), "the package's version, below everything"),
    ("app/paths.py", ("app",), "where files live, below everything that reads one"),
    ("app/stats.py", ("app",), "percentiles and rates, below everything that measures"),
    ("app/pacing.py", tuple(f"={m}" if m == "app" else m for m in _top_modules_except("app.stats", "app.finite")),
     "the one pacing grid (the loop's timer and the sources' poll threads): below the tracking sources, "
     "above only the definition of late (app.stats) and the finite-number check"),
    ("app/events.py", ("app.gui", "app.cli", "app.core", "app.control", "app.pipeline", "app.runtime", "app.sessions",
                       "app.streaming", "app.remote", "app.render", "app.tracking", "app.replay_render", "app.selfcheck",
                       *(m for m in _package_modules("sim") if m != "app.sim.config")),
     "the events and commands a tick carries: value types below the loop (they know the arms' names)"),
    ("app/config_checks.py", ("app.gui", "app.cli", "app.core", "app.control", "app.sim", "app.pipeline", "app.runtime",
                              "app.sessions", "app.streaming", "app.remote", "app.render", "app.tracking", "app.config"),
     "the settings' checks, below every setting"),
    ("app/config.py", ("app.gui", "app.cli", "app.pipeline", "app.runtime", "app.selfcheck", "app.replay_render"),
     "the gathered settings import settings only (test_settings_import_only_settings_and_the_standard_library)"),
    ("app/loop_scheduling.py", ("app.gui", "app.cli", "app.pipeline", "app.runtime", "app.control", "app.sessions",
                                "app.streaming", "app.remote", "app.render", "app.tracking"),
     "the headless run's priority requests, the core's own (app.core.priority) for the loop run by the CLI"),
    ("app/runtime.py", ("app.gui", "app.core", "app.cli", "app.pipeline"),
     "the engine and its source built for the pipeline and the self-check"),
    ("app/selfcheck.py", ("app.gui", "app.cli"), "the bundle's check runs without a window or a command line"),
    ("app/gui", ("app.cli",), "the window sits below the command line that opens it"),
    ("app/cli", ("tests", "bench"), "the command line is the top: it may use every package"),
    ("app/tracking/native_output.py", ("app",), "silences a runtime library's prints: below everything"),
    ("app/tracking/polled_source.py", ("openvr", "xr", "app.tracking.openvr_source", "app.tracking.openxr_source",
                                       "app.tracking.openxr_session", "app.tracking.demo_operator"),
     "the live sources' skeleton knows no runtime: OpenVR and OpenXR fill in its hooks"),
    ("app/tracking", ("app.gui", "app.core", "app.pipeline", "app.control", "app.cli", "app.sessions", "app.streaming",
                      "app.remote", "app.runtime"),
     "sources feed the loop and know nothing above them (the session replay lives in app/sessions)"),
]


def _forbidden(name: str, forbidden: tuple[str, ...]) -> bool:
    """`name` is one of `forbidden` or inside one; an entry '=x' forbids x itself only (a package's
    own name, where some of its modules are allowed)."""
    return any(name == f[1:] if f.startswith("=") else name == f or name.startswith(f + ".") for f in forbidden)


@pytest.mark.parametrize("where,forbidden,why", RULES, ids=[r[0] for r in RULES])
def test_no_import_points_upward(where, forbidden, why):
    bad = []
    for path in _modules(where):
        for name in _imports(path):
            if _forbidden(name, forbidden):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, f"{where}: {why}; " + "; ".join(sorted(bad))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _load_time_nodes(body: list[ast.stmt]):
    """The import statements that run when a module is loaded: at module level, in classes' bodies,
    under `if`/`try`/`with`, never inside a function nor under `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _load_time_nodes(node.body)
            yield from _load_time_nodes(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _load_time_nodes(block)
        elif isinstance(node, (ast.With, ast.ClassDef)):
            yield from _load_time_nodes(node.body)


def _module_file(name: str) -> Path | None:
    """The source file of our module `name` (a package's `__init__.py`), None for another's."""
    if name.split(".")[0] not in ("app", "calibration", "tests", "bench"):
        return None
    base = ROOT.joinpath(*name.split("."))
    for f in (base.with_suffix(".py"), base / "__init__.py"):
        if f.is_file():
            return f
    return None


def _module_name(path: Path) -> str:
    parts = list(path.resolve().relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _loaded_with(name: str) -> set[str]:
    """What loading module `name` loads of ours directly: its parent packages and its load-time imports
    (`from p import m` counts p.m where m is a module)."""
    parts = name.split(".")
    out = {".".join(parts[:i]) for i in range(1, len(parts))}
    path = _module_file(name)
    if path is None:
        return out
    pkg = _package(path, ROOT) if path.name != "__init__.py" else _package(path, ROOT)
    for node in _load_time_nodes(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
            continue
        if node.level == 0:
            module = node.module or ""
        else:
            base = pkg[:len(pkg) - (node.level - 1)] if node.level > 1 else pkg
            module = ".".join(base + ([node.module] if node.module else []))
        out.add(module)
        out.update(f"{module}.{a.name}" for a in node.names if _module_file(f"{module}.{a.name}") is not None)
    return {n for n in out if _module_file(n) is not None}


_GRAPH: dict[str, set[str]] = {}


def _declarations_only(name: str) -> bool:
    """A settings module (which loads only settings and the standard library: its own test), one of the
    light modules the settings may import, or a package's
    lazy `__init__` (which loads nothing of ours): loading one brings no code of its package along, so a
    chain through `app.config` to `app.core.config` is not a dependency on the core."""
    if _is_settings_module(name) or name in SETTINGS_MAY_ALSO_IMPORT:  # those import nothing of app: their rules
        return True
    path = _module_file(name)
    if path is None or path.name != "__init__.py":
        return False
    if name not in _GRAPH:
        _GRAPH[name] = _loaded_with(name)
    return not (_GRAPH[name] - {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)})


def _import_chain(start: str, forbidden: tuple[str, ...]) -> list[str] | None:
    """The shortest chain of load-time imports from `start` to a module `forbidden` names, None if none."""
    parent: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:
        name = queue.pop(0)
        if name != start and _forbidden(name, forbidden) and not _declarations_only(name):
            chain = [name]
            while parent[chain[-1]] is not None:
                chain.append(parent[chain[-1]])
            return chain[::-1]
        if name not in _GRAPH:
            _GRAPH[name] = _loaded_with(name)
        for nxt in sorted(_GRAPH[name]):
            if nxt not in parent:
                parent[nxt] = name
                queue.append(nxt)
    return None


@pytest.mark.parametrize("where,forbidden,why", RULES, ids=[r[0] for r in RULES])
def test_no_import_points_upward_through_other_modules(where, forbidden, why):
    """The same rules over what a module loads with it: its imports' imports, and theirs (load-time
    imports: a function's own imports are the direct rule's, a type checker's are nobody's)."""
    bad = []
    for path in _modules(where):
        chain = _import_chain(_module_name(path), forbidden)
        if chain is not None and not _forbidden(_module_name(path), forbidden):
            bad.append(" -> ".join(chain))
    assert not bad, f"{where}: {why}; " + "; ".join(sorted(bad))


def test_every_module_of_the_application_has_a_layer():
    """Each module of app/ is under a rule of its own layer, not only the application's ('app')."""
    layered = [r[0] for r in RULES if r[0] not in ("app", "calibration")]
    bad = [str(p.relative_to(ROOT)) for p in _modules("app")
           if not any(str(p.relative_to(ROOT)) == w or str(p.relative_to(ROOT)).startswith(w + "/") for w in layered)]
    assert not bad, "modules without a layer in RULES: " + ", ".join(bad)


def test_the_chains_follow_load_time_imports_only(tmp_path):
    """A function's import and a type checker's are not loaded with the module."""
    src = tmp_path / "m.py"
    src.write_text("from typing import TYPE_CHECKING\nimport app.events\nif TYPE_CHECKING:\n    import app.gui\n"
                   "def f():\n    import app.cli\nclass C:\n    import app.stats\n")
    names = {n.module if isinstance(n, ast.ImportFrom) else n.names[0].name
             for n in _load_time_nodes(ast.parse(src.read_text()).body)}
    assert names == {"typing", "app.events", "app.stats"}


def test_benchmarks_import_only_the_shared_test_helpers():
    """bench/ may use `BENCH_HELPERS` and no other part of tests/; the helpers import nothing of tests/
    but each other, so a benchmark never pulls a test module in."""
    helpers = {f"tests.{h}" for h in BENCH_HELPERS}
    bad = [f"{path.relative_to(ROOT)} imports {name}" for path in _modules("bench") for name in _imports(path)
           if (name == "tests" or name.startswith("tests.")) and name not in helpers]
    bad += [f"tests/{h}.py imports {name}" for h in BENCH_HELPERS for name in _imports(ROOT / "tests" / f"{h}.py")
            if (name == "tests" or name.startswith("tests.")) and name not in helpers]
    assert not bad, "; ".join(sorted(bad))


def test_the_rules_see_relative_imports(tmp_path):
    """A relative import is resolved against the module's package, so it cannot slip past a rule."""
    src = tmp_path / "app" / "sim" / "probe.py"
    src.parent.mkdir(parents=True)
    src.write_text("from ..control import engine\nfrom . import scene\nfrom .scene import ArmHandles\n"
                   "def f():\n    from ..gui.main_window import MainWindow\n")
    assert _imports(src, tmp_path) == {"app.control", "app.sim.scene", "app.gui.main_window"}
    assert _forbidden("app.control", ("=app.control",)) and not _forbidden("app.control.snapshot", ("=app.control",))


def test_the_rules_see_imports_inside_functions(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f():\n    from app.gui.main_window import MainWindow\n")
    assert "app.gui.main_window" in _imports(p)


def test_only_the_cli_parses_the_command_line():
    """Argument parsing and the printing of commands live in app/cli; the domain packages return data."""
    bad = [f"{path.relative_to(ROOT)} imports argparse" for path in _modules("app")
           if "argparse" in _imports(path) and path.parent.name != "cli"]
    assert not bad, "; ".join(bad)


# The settings: one checks module, each component's settings beside it, `app/config.py` gathering them.
CONFIG_MODULES = sorted([ROOT / "app" / "config.py", ROOT / "app" / "config_checks.py",
                         *(ROOT / "app").glob("*/config.py")])
SETTINGS_MAY_ALSO_IMPORT = {"app.streaming.locomotion_mode", "app.pickled_once", "app.finite"}
"""Not settings, but as light: the planner's mode enum, the pickle-once mixin and the one finite-number
check (their own rules above: they import nothing of app)."""


def _is_settings_module(name: str) -> bool:
    return name in ("app.config", "app.config_checks") or (name.startswith("app.") and name.endswith(".config"))


@pytest.mark.parametrize("path", CONFIG_MODULES, ids=[str(p.relative_to(ROOT)) for p in CONFIG_MODULES])
def test_settings_import_only_settings_and_the_standard_library(path):
    """Any package may import any component's settings, so the settings import nothing that could
    import that package back (a cycle) or load numpy, MuJoCo, Qt or ZMQ."""
    bad = []
    for name in _imports(path):
        top = name.split(".")[0]
        if top == "app":
            ok = _is_settings_module(name) or name in SETTINGS_MAY_ALSO_IMPORT
        else:
            ok = top in sys.stdlib_module_names or top == "__future__"
        if not ok:
            bad.append(name)
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_checks_are_below_every_setting():
    assert {n for n in _imports(ROOT / "app" / "config_checks.py") if n.split(".")[0] == "app"} <= {"app.finite"}


def test_loading_the_configuration_loads_no_heavy_package():
    """A package's `__init__` imports lazily, so importing its settings does not drag the package in."""
    code = ("import sys, app.config, app.remote.config\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'mujoco', 'PySide6', 'zmq', 'scipy'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_settings_are_imported_from_their_component():
    """`app.config` imports each component's settings for `Config`'s fields; users import them from
    their own module (one home each), and from `app.config` only what it defines, and `ConfigError`."""
    tree = ast.parse((ROOT / "app" / "config.py").read_text(encoding="utf-8"))
    defined = {"ConfigError"}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(t.id for t in targets if isinstance(t, ast.Name))
    bad = []
    for folder in ("app", "bench", "tests"):
        for path in _modules(folder):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == "app.config" and node.level == 0:
                    bad += [f"{path.relative_to(ROOT)} imports {a.name}" for a in node.names if a.name not in defined]
    assert not bad, "; ".join(sorted(bad))
