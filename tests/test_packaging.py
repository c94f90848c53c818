"""What ``pyproject.toml`` declares: the heavy parts behind extras and imported only where their
feature runs, and lower bounds that CI can pin (``.ci/lowest.py``)."""

from __future__ import annotations

import ast
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

from focuscrawl.extras import EXTRAS, MissingExtra, require

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
#: the import names of each extra's packages
OPTIONAL = {"playwright": "render", "scrapy_playwright": "render", "aiohttp": "render", "redis": "redis",
            "matplotlib": "plot"}


def load_lowest():
    spec = importlib.util.spec_from_file_location("ci_lowest", ROOT / ".ci" / "lowest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def names(requirements) -> set[str]:
    return {re.split(r"[<>=\[; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def test_the_heavy_parts_are_extras_not_core_dependencies():
    extras = PROJECT["optional-dependencies"]
    core = names(PROJECT["dependencies"])
    assert not core & {"playwright", "scrapy-playwright", "aiohttp", "redis", "matplotlib"}
    assert names(extras["render"]) == {"playwright", "scrapy-playwright", "aiohttp"}
    assert names(extras["redis"]) == {"redis"} and names(extras["plot"]) == {"matplotlib"}
    assert set(EXTRAS) == {"render", "redis", "plot"}
    assert extras["all"] == ["focuscrawl[render,redis,plot]"] and "focuscrawl[all]" in extras["test"]


def test_no_module_imports_an_extras_package_when_it_is_imported():
    """An import of an extra's package at a module's top level (outside ``if TYPE_CHECKING``)
    would break a core install's ``import focuscrawl...`` with a bare ImportError; a module of a
    feature may import one only after ``require`` (or ``redis_module``) has named the extra."""
    found = []
    for path in sorted((ROOT / "focuscrawl").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded = False
        for node in tree.body:
            value = getattr(node, "value", None)
            if isinstance(value, ast.Call) and getattr(value.func, "id", None) in ("require", "redis_module"):
                guarded = True
            if guarded:
                continue
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module or ""]
            else:
                continue
            for module in modules:
                if module.split(".")[0] in OPTIONAL:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {module}")
    assert not found


def test_a_missing_package_is_named_with_its_extra():
    with pytest.raises(MissingExtra) as err:
        require("focuscrawl_no_such_package", "plot", "--plot")
    assert str(err.value) == ("--plot needs focuscrawl's plot extra (focuscrawl_no_such_package is not installed): "
                              "pip install 'focuscrawl[plot]'")
    assert isinstance(err.value, ImportError) and err.value.extra == "plot"
    assert require("json", "plot", "--plot").dumps([]) == "[]"


def test_every_lower_bound_is_pinned_for_the_lowest_versions_run():
    pins = load_lowest().lowest(ROOT / "pyproject.toml")
    pinned = {pin.split("==")[0] for pin in pins}
    declared = set()
    for requirements in [PROJECT["dependencies"], *PROJECT["optional-dependencies"].values()]:
        declared |= {n.replace(".", "-") for n in names(requirements)} - {"focuscrawl"}
    assert pinned == declared
    assert "datasketch==2.0" in pins  # MinHash(scheme=...)


def test_a_requirement_without_a_lower_bound_is_refused(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\ndependencies = ["scrapy>=2.17", "lxml"]\n')
    with pytest.raises(SystemExit, match="no lower bound to pin in 'lxml'"):
        load_lowest().lowest(pyproject)
