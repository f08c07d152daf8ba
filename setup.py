"""The package list, discovered from the tree so that no package can be left out of a wheel.

``games/``, ``mechanisms/``, ``screens/`` and ``data/`` sit at the top of the repository
but are installed as ``coop_tui.games`` etc. (``package-dir`` in ``pyproject.toml`` maps
them). setuptools' own discovery cannot follow such a mapping, so the packages are found
here, under each mapped directory of that one table; everything else is configured in
``pyproject.toml``. tests/test_wheel.py builds the wheel and checks that it holds every
package and data file of the tree.
"""

import tomllib
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent


def discovered_packages() -> list[str]:
    config = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))
    package_dir: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    packages = []
    for name, directory in package_dir.items():
        packages.append(name)
        packages += [f"{name}.{sub}" for sub in find_packages(str(HERE / directory))]
    return sorted(packages)


setup(packages=discovered_packages())
