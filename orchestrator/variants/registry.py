"""Asking a package registry (npm, PyPI) through its own client: does a release exist, which is newest, its lock."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from orchestrator.variants.packages import Package

__all__ = ["RegistryError", "UnknownVersion", "check_version", "lock_npm", "lock_pypi", "newest_version"]

REGISTRY_TIMEOUT = 120.0
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}")


class RegistryError(RuntimeError):
    """The registry could not be asked (client missing, unreachable, unparseable answer); the message says why."""


class UnknownVersion(RegistryError):
    """The registry has no such release of the package."""


def _env(extra_ca: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if extra_ca is not None:
        # The host's egress may intercept TLS: the same bundle the image builds trust.
        env.update(npm_config_cafile=str(extra_ca), NODE_EXTRA_CA_CERTS=str(extra_ca), PIP_CERT=str(extra_ca))
        env.update(SSL_CERT_FILE=str(extra_ca))
    return env


def _run(argv: list[str], extra_ca: Path | None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    if shutil.which(argv[0]) is None and not Path(argv[0]).is_file():
        raise RegistryError(f"{argv[0]} is not installed on this machine; it is needed to ask the registry")
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=REGISTRY_TIMEOUT, env=_env(extra_ca), cwd=cwd, check=False
        )
    except subprocess.TimeoutExpired:
        raise RegistryError(f"{' '.join(argv[:3])} did not answer within {REGISTRY_TIMEOUT:.0f}s") from None


def _tail(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and "is ignored" not in ln]
    return " | ".join(lines[-3:])[:500]


def _valid(version: str) -> str:
    if not _VERSION.fullmatch(version):
        raise UnknownVersion(f"{version!r} is not a release version (letters, digits, . + _ - only)")
    return version


def _pip() -> list[str]:
    return [sys.executable, "-m", "pip"]


def _pypi_versions(pkg: Package, extra_ca: Path | None) -> list[str]:
    proc = _run([*_pip(), "index", "versions", pkg.name, "--disable-pip-version-check"], extra_ca)
    found = re.search(r"^Available versions:\s*(.+)$", proc.stdout, re.MULTILINE)
    if proc.returncode != 0 or not found:
        if "No matching distribution" in proc.stdout + proc.stderr:
            raise UnknownVersion(f"PyPI has no package {pkg.name!r}")
        raise RegistryError(f"pip index versions {pkg.name} failed: {_tail(proc.stderr + proc.stdout)}")
    return [v.strip() for v in found.group(1).split(",") if v.strip()]  # newest first, as pip lists them


def check_version(pkg: Package, version: str, extra_ca: Path | None = None) -> str:
    """version itself when the registry has that release of pkg; UnknownVersion (named) when it has not."""
    _valid(version)
    if pkg.registry == "npm":
        proc = _run(["npm", "view", f"{pkg.name}@{version}", "version", "--json"], extra_ca)
        if proc.returncode != 0:
            if "E404" in proc.stderr or "No match found" in proc.stderr:
                raise UnknownVersion(f"npm has no release {version} of {pkg.name}")
            raise RegistryError(f"npm view {pkg.name}@{version} failed: {_tail(proc.stderr)}")
        # A range (`0.7`) answers every matching release as a list; only an exact release is a pin.
        answer = json.loads(proc.stdout or "null")
        if answer != version:
            raise UnknownVersion(f"npm has no release {version} of {pkg.name} (a range matched: {answer!r})")
        return version
    if version not in _pypi_versions(pkg, extra_ca):
        raise UnknownVersion(f"PyPI has no release {version} of {pkg.name}")
    return version


def newest_version(pkg: Package, extra_ca: Path | None = None) -> str:
    """The registry's newest release of pkg (npm's `latest` tag; PyPI's newest non-pre-release pip lists)."""
    if pkg.registry == "npm":
        proc = _run(["npm", "view", pkg.name, "version", "--json"], extra_ca)
        if proc.returncode != 0:
            raise RegistryError(f"npm view {pkg.name} failed: {_tail(proc.stderr)}")
        answer = json.loads(proc.stdout or "null")
        if not isinstance(answer, str):
            raise RegistryError(f"npm view {pkg.name} version answered {answer!r}, not a version")
        return answer
    return _pypi_versions(pkg, extra_ca)[0]


def lock_npm(package_json: bytes, extra_ca: Path | None = None) -> bytes:
    """package-lock.json for package_json, resolved from npm without running any package's scripts."""
    with tempfile.TemporaryDirectory(prefix="hp-lock-") as tmp:
        Path(tmp, "package.json").write_bytes(package_json)
        argv = ["npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund"]
        proc = _run(argv, extra_ca, cwd=Path(tmp))
        if proc.returncode != 0:
            raise RegistryError(f"npm could not lock the variant: {_tail(proc.stderr)}")
        return Path(tmp, "package-lock.json").read_bytes()


def lock_pypi(requirements_in: bytes, extra_ca: Path | None = None) -> bytes:
    """requirements.lock for requirements_in, hash-locked as `make lock` locks it (uv, Python 3.13, Linux)."""
    uv = Path(sys.executable).with_name("uv")
    with tempfile.TemporaryDirectory(prefix="hp-lock-") as tmp:
        Path(tmp, "requirements.in").write_bytes(requirements_in)
        argv = [str(uv) if uv.is_file() else "uv", "pip", "compile", "--quiet", "--generate-hashes"]
        argv += ["--python-version", "3.13", "--python-platform", "linux", "--custom-compile-command", "make lock"]
        argv += ["--native-tls", "requirements.in", "-o", "requirements.lock"]
        proc = _run(argv, extra_ca, cwd=Path(tmp))
        if proc.returncode != 0:
            raise RegistryError(f"uv could not lock the variant: {_tail(proc.stderr)}")
        return Path(tmp, "requirements.lock").read_bytes()
