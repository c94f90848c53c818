"""Print pip constraints pinning every declared dependency to its declared lower bound.

``pyproject.toml``'s dependencies and extras say ``name>=X``; CI installs the project with these
constraints into a venv of its own and runs the fast tests there, so a lower bound is one the code
has run against, not one remembered. Usage: python .ci/lowest.py > lowest.txt
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*>=\s*([0-9][^,;\s]*)\s*(?:[,;].*)?$")


def lowest(pyproject: Path) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    pins: dict[str, str] = {}
    for requirement in requirements:
        match = REQUIREMENT.match(requirement)
        if match is None:
            if not requirement.startswith(project["name"] + "["):  # an extra made of the others
                sys.exit(f"no lower bound to pin in {requirement!r}: declare one (name>=X)")
            continue
        name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
        pins[name] = match.group(2)
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


if __name__ == "__main__":
    print("\n".join(lowest(Path(__file__).resolve().parents[1] / "pyproject.toml")))
