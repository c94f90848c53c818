"""The package's shape, as the developers' guide asks it: small modules with one job, classes of
one job, and parts that meet through public doors, never through another module's private
attributes. Read from the source alone (nothing imported), so it is fast."""

import ast
import functools
import importlib.util
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "focuscrawl"
MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 350
#: modules held to a tighter size than the rest: the scheduler only wires its parts together
SMALLER = {"scheduler.py": 400}
#: classes that declare rather than do, so their length is their list's: FocusConfig is one field a
#: FOCUS_* setting (the settings' one home, each with its default, conversion and documentation)
DECLARATIONS = {("config.py", "FocusConfig")}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


@functools.cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_the_package_has_modules_to_check():
    found = modules()
    assert len(found) > 100 and PACKAGE / "scheduler.py" in found and PACKAGE / "learning" / "learner.py" in found


@pytest.mark.parametrize("path", modules(), ids=name)
def test_no_module_is_over_600_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    limit = SMALLER.get(name(path), MAX_MODULE_LINES)
    assert lines <= limit, f"{name(path)} has {lines} lines (at most {limit}): split it by job"


@pytest.mark.parametrize("path", modules(), ids=name)
def test_no_class_is_over_350_lines(path):
    big = {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(parsed(path))
           if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES
           and (name(path), node.name) not in DECLARATIONS}
    assert not big, f"{name(path)}: {big} (lines): give the class's other jobs to parts of their own"


def defined_attributes(tree: ast.Module) -> set[str]:
    """The names a module gives meaning to: its functions, classes and variables, attributes it
    assigns (``self._x = ...``) and names it lists as strings (``__slots__``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            out.add(node.value)
    return out


def private_reads(tree: ast.Module) -> list[tuple[int, str, str]]:
    """(line, expression, attribute) of every ``x._name`` where ``x`` is not ``self``, ``cls``
    nor ``super()``: a private attribute read (or called) on another object."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            continue  # an override calling the implementation it overrides
        out.append((node.lineno, ast.unparse(node), node.attr))
    return out


def test_no_module_reads_another_modules_private_attributes():
    """A private name a module reads on another object must be one the module itself defines (its
    own class's, built in a ``from_crawler``), not one only another focuscrawl module defines:
    that is a part reaching into another part. Libraries' private names (outside focuscrawl) are
    not this test's business."""
    trees = {name(path): parsed(path) for path in modules()}
    defined = {module: defined_attributes(tree) for module, tree in trees.items()}
    everywhere = set().union(*defined.values())
    found = [f"{module}:{line}: {expression}" for module, tree in trees.items()
             for line, expression, attribute in private_reads(tree)
             if attribute not in defined[module] and attribute in everywhere]
    assert not found, "private attributes of other modules read:\n" + "\n".join(found)


def test_the_private_reads_check_finds_a_read_across_modules():
    owner = ast.parse("class Part:\n    def __init__(self):\n        self._state = 1\n")
    reader = ast.parse("def look(part):\n    return part._state\n")
    reads = private_reads(reader)
    assert [attribute for _, _, attribute in reads] == ["_state"]
    assert "_state" in defined_attributes(owner) and "_state" not in defined_attributes(reader)
    assert private_reads(ast.parse("class A:\n    def f(self):\n        return self._x, super()._y()\n")) == []


@pytest.mark.parametrize("path, attribute", [
    ("focuscrawl.rendering.browser", "FocusDownloadHandler"),  # DOWNLOAD_HANDLERS (the add-on's)
    ("focuscrawl.rendering.health", "RenderHealthMiddleware"),  # DOWNLOADER_MIDDLEWARES
])
def test_the_class_paths_settings_name_still_load(path, attribute):
    from scrapy.utils.misc import load_object

    assert load_object(f"{path}.{attribute}").__name__ == attribute


def test_the_splash_compat_path_projects_name_is_the_splash_compat_module():
    if importlib.util.find_spec("scrapy_splash") is None:  # imported only once patched (install)
        pytest.skip("scrapy-splash is not installed")
    from scrapy.utils.misc import load_object

    from focuscrawl.rendering import splash_compat
    from focuscrawl.rendering.splash import compat

    assert splash_compat is compat
    compat.install()
    assert (load_object("focuscrawl.rendering.splash_compat.SplashMiddleware")
            is load_object("focuscrawl.rendering.splash.compat.SplashMiddleware"))


def test_the_benchmarks_hold_only_current_figures():
    """docs/benchmarks.md keeps the newest measurement of each figure (history is in git): a size
    past 60 KB means superseded runs were kept."""
    size = (PACKAGE.parent / "docs" / "benchmarks.md").stat().st_size
    assert size <= 60_000, f"docs/benchmarks.md is {size} bytes: keep only the current figures"
