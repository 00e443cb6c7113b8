"""`--harness-source` inputs that are no regular file, too big, oddly named or unreachable: each a named SourceError."""

from __future__ import annotations

import io
import json
import os
import socket
import tarfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.variants import PACKAGES, SourceError, source_variant
from orchestrator.variants import source as source_module
from orchestrator.variants.source import npm_tarball, python_files

CODEX = PACKAGES["codex"]
HERMES = PACKAGES["hermes"]
WHEEL = "hermes_agent-0.20.0-py3-none-any.whl"


def _refusal(call: Callable[[], object], fifo: Path | None = None) -> str:
    """The SourceError call raises, run in a thread: a regression that blocks (opening a FIFO waits for a writer)
    fails the test instead of hanging it."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        if fifo is not None:  # let the blocked open return, so the thread ends with the test
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the source check blocked instead of refusing the source")
    assert outcome and isinstance(outcome[0], SourceError), outcome
    return str(outcome[0])


def _tgz(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _manifest(name: str) -> tuple[str, bytes]:
    return "package/package.json", json.dumps({"name": name, "version": "1.0.0"}).encode()


def test_an_npm_source_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "pkg.tgz"
    os.mkfifo(fifo)
    assert "is a FIFO" in _refusal(lambda: npm_tarball(fifo, CODEX), fifo)
    # A final link is followed, as a folder given by a link is: what it leads to is judged.
    (tmp_path / "link.tgz").symlink_to(fifo)
    assert "is a FIFO" in _refusal(lambda: npm_tarball(tmp_path / "link.tgz", CODEX), fifo)
    (tmp_path / "good.tgz").symlink_to(_tgz(tmp_path / "real.tgz", [_manifest(CODEX.name)]))
    assert npm_tarball(tmp_path / "good.tgz", CODEX) == (tmp_path / "real.tgz").read_bytes()


def test_devices_sockets_and_fifos_are_named_for_npm_and_wheel_sources(tmp_path: Path) -> None:
    if Path("/dev/zero").exists():
        assert "is a character device" in _refusal(lambda: npm_tarball(Path("/dev/zero"), CODEX))
    sock_path = tmp_path / "s.tgz"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        assert "is a socket" in _refusal(lambda: npm_tarball(sock_path, CODEX))
    fifo = tmp_path / WHEEL
    os.mkfifo(fifo)
    assert "is a FIFO" in _refusal(lambda: python_files(fifo, HERMES), fifo)


@pytest.mark.parametrize(
    "name",
    [
        "hermes_agent-1.0-py3-none-any (1).whl",
        "hermes_agent-1.0;id>&2;.whl",
        "hermes_agent-1\nRUN echo injected\n.whl",
        "hermes_agent-1.0-py3-none-any.whl\n.whl",
        "hermes_agent-1.0.whl",
        "hermes_agent-1.0-py3-none-any-x-y.whl",
        "hermes_agent-1.0-py3-none-$(id).whl",
    ],
)
def test_a_wheel_whose_name_is_no_wheel_name_is_refused(tmp_path: Path, name: str) -> None:
    wheel = tmp_path / name
    wheel.write_bytes(b"PK")
    with pytest.raises(SourceError, match="is no wheel file name"):
        source_variant("hermes", "hermes", wheel)


@pytest.mark.parametrize(
    "name",
    [
        WHEEL,
        "hermes_agent-1!2.0+local.1-1build-py2.py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "Hermes.Agent-0.1rc1-cp313-cp313-linux_x86_64.whl",
    ],
)
def test_every_wheel_name_pep_427_allows_is_taken(tmp_path: Path, name: str) -> None:
    wheel = tmp_path / name
    wheel.write_bytes(b"PK")
    assert python_files(wheel, HERMES) == (f"harness-source/{name}", {f"harness-source/{name}": b"PK"})


def test_the_install_line_quotes_what_pip_installs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The wheel name check is one guard; the quoting in the RUN line is the other, whatever reaches it.
    monkeypatch.setattr("orchestrator.variants.variant.python_files", lambda path, pkg: ("harness-source/a b;c", {}))
    (tmp_path / WHEEL).write_bytes(b"PK")
    variant, _ = source_variant("hermes", "hermes", tmp_path / WHEEL)
    run = [line for line in variant.files["Dockerfile"].decode().splitlines() if line.startswith("RUN ")]
    assert len(run) == 1 and run[0].endswith(" '/opt/harness-source/a b;c'"), run


def test_tarballs_and_wheels_over_the_size_cap_are_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(source_module, "MAX_SOURCE_BYTES", 4096)
    big_tgz = tmp_path / "big.tgz"
    with big_tgz.open("wb") as f:
        f.truncate(4097)
    with pytest.raises(SourceError, match="is 4097 bytes, over the 4096 bytes"):
        npm_tarball(big_tgz, CODEX)
    wheel = tmp_path / WHEEL
    with wheel.open("wb") as f:
        f.truncate(4097)
    with pytest.raises(SourceError, match="is 4097 bytes, over the 4096 bytes"):
        python_files(wheel, HERMES)


def test_a_tarball_that_unpacks_past_the_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A few KiB of gzip holding a member of zeros many times the cap (a 2 MB .tgz can hold 2 GiB).
    bomb = _tgz(tmp_path / "bomb.tgz", [("package/big", bytes(1 << 20)), _manifest(CODEX.name)])
    monkeypatch.setattr(source_module, "MAX_SOURCE_BYTES", 1 << 16)
    assert bomb.stat().st_size < 1 << 16
    with pytest.raises(SourceError, match=r"bomb\.tgz unpacks to more than 65536 bytes"):
        npm_tarball(bomb, CODEX)
    # A pax header is read into memory whole: it is capped too.
    pax = tmp_path / "pax.tgz"
    with tarfile.open(pax, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("package/package.json")
        info.pax_headers = {"comment": "x" * (1 << 20)}
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(SourceError, match="unpacks to more than 65536 bytes"):
        npm_tarball(pax, CODEX)


def test_a_valid_tarball_is_read_as_before_the_last_manifest_naming_it(tmp_path: Path) -> None:
    # tarfile (and npm's unpacking) takes the last of two entries with one name: the whole scan is kept.
    both = _tgz(tmp_path / "both.tgz", [_manifest("left-pad"), ("package/a.js", b"1"), _manifest(CODEX.name)])
    assert npm_tarball(both, CODEX) == both.read_bytes()
    with pytest.raises(SourceError, match="is the npm package 'left-pad'"):
        npm_tarball(_tgz(tmp_path / "rev.tgz", [_manifest(CODEX.name), _manifest("left-pad")]), CODEX)


def test_a_link_loop_says_why_and_a_missing_path_does_not_exist(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    for call in (lambda: source_variant("codex", "codex", loop), lambda: npm_tarball(loop, CODEX)):
        with pytest.raises(SourceError, match="cannot be read: Too many levels of symbolic links"):
            call()
    (tmp_path / "afile").write_text("x")
    for missing in (tmp_path / "missing", tmp_path / "afile" / "x"):
        with pytest.raises(SourceError, match=r"does not exist$"):
            source_variant("codex", "codex", missing)


def test_a_home_of_no_such_user_is_a_named_error() -> None:
    with pytest.raises(SourceError, match="--harness-source: ~no-such-user-hp"):
        source_variant("codex", "codex", Path("~no-such-user-hp/pkg.tgz"))
