"""Packages for setuptools (metadata is in pyproject.toml). The folders passes/, codegen/ and targets/ stay at the
top of the repository (the project layout) but install as gir.passes, gir.codegen and gir.targets: nothing named
`passes`, `codegen` or `targets` lands at the top of site-packages."""
from setuptools import find_packages, setup

MAPPED = {"gir.passes": "passes", "gir.codegen": "codegen", "gir.targets": "targets"}

packages = find_packages(include=["gir", "gir.*"])
for name, folder in MAPPED.items():
    packages += [name] + [f"{name}.{sub}" for sub in find_packages(where=folder)]

setup(packages=packages, package_dir={"gir": "gir", **MAPPED})
