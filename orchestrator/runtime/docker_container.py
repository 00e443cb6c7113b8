"""One created container on a Docker-API engine: files in, start, wait with a deadline, logs and files out under
the episode's caps, always removed."""

from __future__ import annotations

import io
import re
import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import docker
import docker.errors
import structlog
from docker.models.containers import Container

from orchestrator.runtime.collect import Collection, Finding

log = structlog.get_logger(__name__)

__all__ = ["REMOVE_SECONDS", "RunningContainer"]

# Where the engine's message names the container's file system on the host (Docker: /var/lib/docker/overlay2/<id>/
# merged; Podman: .../overlay/<id>/merged): that part is the host's, not the container's, and is left out.
_HOST_ROOT = re.compile(r"\S*/merged(?=/|\s|$)")

# How long removal keeps trying while the engine is still tearing a container down.
REMOVE_SECONDS = 90.0


class RunningContainer:
    """A created container: put files in, start, wait with a deadline, copy files out, always remove."""

    # Podman 4.3 names the members of a volume mount point's archive '' and `/file` (Docker: `name/file`).
    rooted_names = False

    def __init__(self, container: Container) -> None:
        self._c = container

    @property
    def id(self) -> str:
        return str(self._c.id)

    @property
    def name(self) -> str:
        return str(self._c.name)

    def start(self) -> None:
        self._c.start()

    def logs(self) -> bytes:
        try:
            return bytes(self._c.logs(stdout=True, stderr=True, timestamps=False))
        except docker.errors.APIError:
            return b""

    def wait_for_log(self, needle: bytes, timeout: float) -> None:
        """Readiness by log line, read as the engine streams the output (seen at once, no API call every tenth of a
        second); on timeout the container's output goes into the error, since that is the diagnosis."""
        deadline = time.monotonic() + timeout
        why = f"did not print {needle!r} within {timeout:.0f}s"
        try:
            if self._follow_logs_for(needle, deadline):
                return
        except Exception as exc:  # the stream broke (engine, timeout): the polling below decides
            log.debug("following the log stream failed; polling", container=self.name, error=str(exc)[:300])
        while time.monotonic() < deadline:
            self._c.reload()
            if needle in self.logs():
                return
            if self._c.status in ("exited", "dead"):
                why = f"exited before printing {needle!r}"
                break
            time.sleep(0.1)
        text = self.logs().decode(errors="replace")[-4000:]
        raise TimeoutError(f"container {self.name} {why}; its output:\n{text}")

    def _follow_logs_for(self, needle: bytes, deadline: float) -> bool:
        """True once the followed output holds `needle`; False when the stream ended (the container stopped) first.

        Read frame by frame as the SDK does (an 8-byte header, then its payload): a read of a fixed size would wait
        for bytes that a quiet container never prints.
        """
        api: Any = self._c.client.api  # type: ignore[union-attr]
        res = api._get(
            api._url("/containers/{0}/logs", self.id),
            params={"stdout": 1, "stderr": 1, "follow": 1, "timestamps": 0},
            headers={"Accept-Encoding": "identity"},
            stream=True,
        )
        try:
            api._raise_for_status(res)
            sock = api._get_raw_response_socket(res)
            targets: list[Any] = [s for s in (sock, getattr(sock, "_sock", None)) if hasattr(s, "settimeout")]
            seen = b""
            # A container that prints without pause never lets a read time out: the deadline is checked per frame.
            while time.monotonic() < deadline:
                for s in targets:
                    s.settimeout(max(0.05, deadline - time.monotonic()))
                header = res.raw.read(8)
                if len(header) < 8:
                    return False
                if header[0] not in (0, 1, 2) or header[1:4] != b"\0\0\0":
                    raise ValueError("the log stream is not framed")  # a TTY container: polled instead
                payload = res.raw.read(int.from_bytes(header[4:8], "big"))
                # Only a tail is kept: the needle may span two frames, and the output before it is of no interest.
                seen = (seen + payload)[-(len(needle) + (1 << 16)) :]
                if needle in seen:
                    return True
            return False
        finally:
            res.close()

    def wait(self, timeout: float) -> int | None:
        """Exit code, or None if the deadline passed (the caller decides to kill)."""
        try:
            result = self._c.wait(timeout=timeout)
        except Exception as exc:  # the SDK raises requests' ReadTimeout/ConnectionError on deadline
            if "timed out" in str(exc).lower() or "timeout" in type(exc).__name__.lower():
                return None
            raise
        return int(result.get("StatusCode", -1))

    def kill(self) -> None:
        try:
            self._c.kill()  # type: ignore[no-untyped-call]
        except docker.errors.APIError as exc:
            log.debug("kill failed", container=self.name, error=str(exc))

    def stop(self, timeout: int = 10) -> None:
        try:
            self._c.stop(timeout=timeout)
        except docker.errors.APIError as exc:
            log.debug("stop failed", container=self.name, error=str(exc))

    def state(self) -> dict[str, Any]:
        self._c.reload()
        return dict(self._c.attrs.get("State", {}))

    def put_files(self, files: dict[str, bytes], base: str = "/", uid: int = 0, gid: int = 0) -> None:
        """Copy files in below `base` (which must exist); folders created on the way belong to uid:gid."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            dirs: set[str] = set()
            for path, data in sorted(files.items()):
                parts = PurePosixPath(path).relative_to(base).parts
                for i in range(1, len(parts)):
                    d = "/".join(parts[:i])
                    if d not in dirs:
                        dirs.add(d)
                        info = tarfile.TarInfo(d)
                        info.type = tarfile.DIRTYPE
                        info.mode = 0o755
                        info.uid, info.gid = uid, gid
                        tar.addfile(info)
                info = tarfile.TarInfo("/".join(parts))
                info.size = len(data)
                info.mode = 0o644
                info.uid, info.gid = uid, gid
                info.mtime = int(time.time())
                tar.addfile(info, io.BytesIO(data))
        if not self._c.put_archive(base, buf.getvalue()):
            raise RuntimeError(f"could not copy files into {self.name}")

    def copy_out(self, path: str, dest: Path, collection: Collection) -> bool:
        """Copy a file or folder out of the container (running or stopped) below dest; False if absent.

        The archive is streamed to disk under the episode's caps; links and special files are findings.
        """
        api: Any = self._c.client.api  # type: ignore[union-attr]
        # identity: the raw tar, never a compressed stream whose size on disk we could not bound by what we read.
        res = api._get(
            api._url("/containers/{0}/archive", self.id),
            params={"path": path},
            headers={"Accept-Encoding": "identity"},
            stream=True,
        )
        try:
            if res.status_code == 404:
                return False
            if 400 <= res.status_code < 600:
                # The engine could not archive what the harness left at the path (a link loop, a parent that is a
                # file or a FIFO): the harness's doing, so a finding, never the episode's error.
                collection.note(Finding("unreadable", path, f"the engine could not archive it: {_engine_reason(res)}"))
                return False
            api._raise_for_status(res)
            sock = api._get_raw_response_socket(res)
            collection.extract(
                _timed_chunks(res, sock, collection.remaining_seconds), dest, path, rooted_names=self.rooted_names
            )
        finally:
            res.close()
        return True

    def save_logs(self, dest: Path, collection: Collection) -> None:
        """stdout + stderr to `dest`, head and tail kept under the episode's caps."""
        api: Any = self._c.client.api  # type: ignore[union-attr]
        try:
            res = api._get(
                api._url("/containers/{0}/logs", self.id),
                params={"stdout": 1, "stderr": 1, "follow": 0, "timestamps": 0},
                headers={"Accept-Encoding": "identity"},
                stream=True,
            )
            api._raise_for_status(res)
        except docker.errors.APIError as exc:
            dest.write_text(f"[harness-probe: logs unavailable: {exc}]\n")
            return
        try:
            sock = api._get_raw_response_socket(res)
            collection.save_log(_demux(_timed_chunks(res, sock, collection.remaining_seconds)), dest)
        finally:
            res.close()

    def remove(self) -> None:
        # A container full of processes (a fork bomb) can outlast the engine's own kill wait: ask again.
        deadline = time.monotonic() + REMOVE_SECONDS
        while True:
            try:
                self._c.remove(force=True, v=True)
                return
            except docker.errors.NotFound:
                return
            except docker.errors.APIError as exc:
                if time.monotonic() > deadline:
                    log.error("could not remove", container=self.name, error=str(exc))
                    raise
                log.info("container not removed yet; trying again", container=self.name, error=str(exc))
                time.sleep(1.0)


def _timed_chunks(res: Any, sock: Any, remaining: Callable[[], float]) -> Iterator[bytes]:
    # The SDK disables the socket timeout on streams; every read here gets what is left of the deadline.
    # Unix-socket and TLS responses wrap the socket differently; set the deadline on whichever can take it.
    targets: list[Any] = [s for s in (sock, getattr(sock, "_sock", None)) if hasattr(s, "settimeout")]
    while True:
        for s in targets:
            s.settimeout(max(0.05, remaining()))
        chunk = res.raw.read(1 << 16)
        if not chunk:
            return
        yield bytes(chunk)


def _demux(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The engine's multiplexed log stream (8-byte frame headers) as plain bytes, stdout and stderr in order."""
    buf = bytearray()
    framed = True
    for chunk in chunks:
        if not framed:
            yield chunk
            continue
        buf += chunk
        while len(buf) >= 8:
            if buf[0] not in (0, 1, 2) or buf[1:4] != b"\0\0\0":
                framed = False  # a TTY container's logs are not framed
                yield bytes(buf)
                buf.clear()
                break
            size = int.from_bytes(buf[4:8], "big")
            if len(buf) < 8 + size:
                break
            yield bytes(buf[8 : 8 + size])
            del buf[: 8 + size]
    if buf:
        yield bytes(buf)


def _engine_reason(res: Any) -> str:
    """The engine's own message for a refused archive, without the host's paths, in at most 300 characters."""
    try:
        body = res.json()
        message = body.get("message") if isinstance(body, dict) else None
    except ValueError:
        message = None
    text = message if isinstance(message, str) else f"HTTP {res.status_code}"
    return _HOST_ROOT.sub("", text)[:300]
