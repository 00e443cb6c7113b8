"""Image inputs: the content hash covers every build input and nothing incidental."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import images


def test_context_includes_addon_for_proxy_only() -> None:
    proxy = images._context_files("proxy", b"")
    ref = images._context_files("reference", b"")
    assert "Dockerfile" in proxy and "requirements.lock" in proxy
    assert any(k.startswith("proxy_addons/") for k in proxy)
    assert not any(k.startswith("proxy_addons/") for k in ref)
    assert not any("__pycache__" in k or k.endswith(".pyc") for k in proxy | ref)


def test_build_ca_is_an_input() -> None:
    assert images._context_files("base", b"")["build-ca.pem"] == b""
    assert images._context_files("base", b"PEM")["build-ca.pem"] == b"PEM"


def test_default_extra_ca_prefers_our_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ours, pips = tmp_path / "ours.pem", tmp_path / "pip.pem"
    ours.write_text("a")
    pips.write_text("b")
    monkeypatch.setenv("PIP_CERT", str(pips))
    monkeypatch.delenv("HARNESS_PROBE_EXTRA_CA", raising=False)
    assert images.default_extra_ca() == pips
    monkeypatch.setenv("HARNESS_PROBE_EXTRA_CA", str(ours))
    assert images.default_extra_ca() == ours
    monkeypatch.delenv("HARNESS_PROBE_EXTRA_CA")
    monkeypatch.delenv("PIP_CERT")
    assert images.default_extra_ca() is None


def test_every_image_pins_its_python_packages() -> None:
    for name in images.image_names():
        req = images.IMAGES_DIR / name / "requirements.lock"
        if (images.IMAGES_DIR / name / "requirements.in").exists():
            text = req.read_text()
            assert "--hash=sha256:" in text, f"{name}: lock has no hashes"
            assert "--require-hashes" in (images.IMAGES_DIR / name / "Dockerfile").read_text()


def test_parent_defaults_to_base_and_can_be_named() -> None:
    assert images.parent_of("reference") == "base"
    assert images.parent_of("node") == "base"
    for name in images.image_names():
        if name != "base":
            assert images.parent_of(name) in images.image_names(), name
