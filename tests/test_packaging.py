"""pyproject.toml against the tree: every package listed (the list is explicit, for the app's installed name),
the licence in its SPDX form with its file, py.typed shipped, the app installed as ``bgsub_gui``."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def _installed_name(folder: Path) -> str:
    """The dotted name a package folder installs as (package-dir maps gui/ to bgsub_gui)."""
    parts = list(folder.relative_to(REPO).parts)
    for name, where in SETUPTOOLS.get("package-dir", {}).items():
        if parts[:1] == [where]:
            parts[0] = name
    return ".".join(parts)


def test_every_package_folder_is_listed():
    folders = [p.parent for top in ("learners", "bgsub", "gui") for p in (REPO / top).rglob("__init__.py")
               if "__pycache__" not in p.parts]
    assert sorted(_installed_name(f) for f in folders) == sorted(SETUPTOOLS["packages"])


def test_the_app_installs_as_bgsub_gui_not_gui():
    assert "gui" not in SETUPTOOLS["packages"]
    assert SETUPTOOLS["package-dir"] == {"bgsub_gui": "gui"}
    assert PYPROJECT["project"]["scripts"]["bgsub-gui"] == "bgsub_gui.app:main"
    # inside the package only relative imports of its own modules: they work under either name
    absolute = [f"{p.name}: {line.strip()}" for p in (REPO / "gui").glob("*.py")
                for line in p.read_text().splitlines() if re.match(r"\s*(from|import) gui\b", line)]
    assert not absolute


def test_bgsub_gui_imports_from_the_installed_package():
    module = importlib.import_module("bgsub_gui.app")
    assert Path(module.__file__).resolve().parent == REPO / "gui"
    assert callable(module.main)


def test_licence_is_spdx_with_its_file():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c)" in text
    requires = PYPROJECT["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77 for r in requires), requires
    assert "License :: OSI Approved :: MIT License" not in project["classifiers"]  # SPDX replaces it (PEP 639)


def test_py_typed_is_shipped():
    data = SETUPTOOLS["package-data"]
    for package, folder in (("learners", "learners"), ("bgsub", "bgsub"), ("bgsub_gui", "gui")):
        assert (REPO / folder / "py.typed").is_file()
        assert "py.typed" in data[package]
    assert "Typing :: Typed" in PYPROJECT["project"]["classifiers"]
