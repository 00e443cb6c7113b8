"""The pod on Apptainer: no daemon, no root. A holder process owns one user + network namespace (loopback only);
the proxy and the harness each run as `apptainer exec` inside it, from SIF files cached by content hash.

Every path that is copied out after a process ends (the witness, the markers, the harness's writable paths) is a
host directory bound into that one process, below one work directory per pod; nothing else of the host is
visible (`--containall`). What Docker gives and Apptainer cannot (memory/CPU/pids limits without cgroup
delegation, size caps on the writable paths) is stated in `limits()`, never assumed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

import structlog

from orchestrator.runtime.apptainer_cmd import (
    Bind,
    ExecSpec,
    build_sif_command,
    env_file_text,
    exec_command,
    holder_command,
    sif_name,
)
from orchestrator.runtime.apptainer_guard import (
    CGROUPS_ENV,
    UnsafePath,
    child_environment,
    private_folder,
    record_sif,
    verified_sif,
)
from orchestrator.runtime.apptainer_pods import cleanup_apptainer_pods, write_pod_file
from orchestrator.runtime.collect import Collection
from orchestrator.runtime.pod import LOOPBACK, PROVIDER_HOST, PodSpec
from orchestrator.runtime.spec import ContainerSpec

log = structlog.get_logger(__name__)

__all__ = ["ApptainerPod", "ApptainerRuntime", "ApptainerUnavailable"]

LOG_CAP = 16 << 20  # bytes of a process's output kept on disk (head; the rest is dropped and marked)


class ApptainerUnavailable(RuntimeError):
    """Apptainer, or what its pod needs, is missing; the message says what."""


class _CappedLog:
    """A process's stdout+stderr in a file; the runtime keeps the file, never the process's pipe in memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: IO[bytes] = path.open("wb")

    def read(self) -> bytes:
        with self.path.open("rb") as f:
            data = f.read(LOG_CAP + 1)
        return data if len(data) <= LOG_CAP else data[:LOG_CAP] + b"\n[harness-probe: output cut at 16 MiB]\n"


@dataclass
class _Mapped:
    """A container path and the host directory that holds it."""

    container: str
    host: Path


class ApptainerProcess:
    """One process of the pod (proxy or harness), started on `start()`, as a ContainerHandle."""

    def __init__(self, name: str, argv: list[str], workdir: Path, mapped: list[_Mapped]) -> None:
        self._name = name
        self._argv = argv
        self._log = _CappedLog(workdir / f"{name}.log")
        self._mapped = sorted(mapped, key=lambda m: len(m.container), reverse=True)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        # Own session: a kill reaches Apptainer's starter and everything below it.
        self._proc = subprocess.Popen(
            self._argv,
            # The process's own environment, scrubbed (not configuration: what every child inherits): no host
            # APPTAINER_BIND(PATH), APPTAINER_* flag or APPTAINERENV_* variable reaches the pod.
            env=child_environment(os.environ),
            stdin=subprocess.DEVNULL,
            stdout=self._log.file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait(self, timeout: float) -> int | None:
        if self._proc is None:
            raise RuntimeError(f"{self._name} was never started")
        try:
            return self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def _signal(self, sig: int) -> None:
        if self._proc is not None and self._proc.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(self._proc.pid, sig)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)
        if self._proc is not None:
            self._proc.wait(10)

    def stop(self, timeout: int = 10) -> None:
        self._signal(signal.SIGTERM)
        if self._proc is not None and self.wait(timeout) is None:
            self.kill()

    def logs(self) -> bytes:
        self._log.file.flush()
        return self._log.read()

    def wait_for_log(self, needle: bytes, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.logs():
            if self._proc is not None and self._proc.poll() is not None:
                raise RuntimeError(f"{self._name} exited ({self._proc.returncode}) before it was ready")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self._name} not ready after {timeout:.0f} s")
            time.sleep(0.1)

    def host_path(self, path: str) -> Path | None:
        p = PurePosixPath(path)
        for m in self._mapped:
            base = PurePosixPath(m.container)
            if p == base or base in p.parents:
                return m.host / p.relative_to(base)
        return None

    def save_logs(self, dest: Path, collection: Collection) -> None:
        self._log.file.flush()

        def chunks() -> Iterator[bytes]:
            with self._log.path.open("rb") as f:
                while chunk := f.read(1 << 16):
                    yield chunk

        collection.save_log(chunks(), dest)

    def copy_out(self, path: str, dest: Path, collection: Collection) -> bool:
        """Like `docker cp`: `path` lands below dest under its own name, copied as the archives of the other
        runtimes are (regular files and folders only, never through a link, under the episode's caps)."""
        src = self.host_path(path)
        if src is None or not os.path.lexists(src):
            return False
        collection.copy_tree(src, dest / PurePosixPath(path).name, path)
        return True

    def close(self) -> None:
        self.kill()
        self._log.file.close()


class ApptainerPod:
    def __init__(
        self, proxy: ApptainerProcess, harness: ApptainerProcess, spec: PodSpec, cgroups: bool = False
    ) -> None:
        self._cgroups = cgroups
        self._proxy, self._harness, self._spec = proxy, harness, spec

    @property
    def proxy(self) -> ApptainerProcess:
        return self._proxy

    @property
    def harness(self) -> ApptainerProcess:
        return self._harness

    def limits(self) -> dict[str, Any]:
        spec = self._spec.harness
        if self._cgroups:
            harness: dict[str, Any] = {
                "memory": spec.mem_limit,
                "cpus": spec.cpus,
                "pids": spec.pids_limit,
                "network": "pod",
            }
        else:
            not_enforced = f"not enforced (cgroups v2 delegation not declared: {CGROUPS_ENV}=1)"
            harness = {"memory": not_enforced, "cpus": not_enforced, "pids": not_enforced, "network": "pod"}
        harness["writable"] = {
            p: f"host directory, size {s} not enforced" for p, s in sorted(self._spec.writable.items())
        }
        return {"proxy": {"network": "loopback only (user+network namespace)"}, "harness": harness}


class ApptainerRuntime:
    """SIF cache + pods. `archives` is a directory written by `harness-probe images export` (images.json)."""

    name = "apptainer"

    def __init__(self, sif_cache: Path, work_root: Path, archives: Path | None, cgroups: bool = False) -> None:
        self.cgroups = cgroups  # limits are asked of Apptainer only where cgroups are delegated (CGROUPS_ENV)
        binary = shutil.which("apptainer") or shutil.which("singularity")
        if binary is None:
            raise ApptainerUnavailable("apptainer is not installed (see `harness-probe doctor`)")
        self.apptainer = binary
        self.sif_cache = sif_cache
        self.work_root = work_root
        self._verified: set[str] = set()  # tags whose SIF this process checked (the cache is this user's alone)
        if archives is None:
            raise ApptainerUnavailable(
                "the apptainer runtime needs image archives: `harness-probe images export proxy reference -o DIR` "
                "on a machine with Docker or Podman, then --image-archives DIR (or HARNESS_PROBE_IMAGE_ARCHIVES)"
            )
        self.image_archives: Path | None = archives

    def server_version(self) -> str:
        out = subprocess.run([self.apptainer, "--version"], capture_output=True, text=True, timeout=30, check=False)
        return out.stdout.strip() or "apptainer (version unknown)"

    def describe(self) -> dict[str, Any]:
        return {"runtime": self.name, "server_version": self.server_version(), "docker_host": None, "rootless": True}

    def run_once(self, spec: ContainerSpec, timeout: float) -> tuple[int | None, bytes]:
        """A version probe: the image alone, in a pod of its own (loopback only), killed at the deadline."""
        work = Path(tempfile.mkdtemp(prefix=f"{spec.name}-", dir=self._work_root()))
        holder = subprocess.Popen(holder_command(sys.executable), stdout=subprocess.PIPE, start_new_session=True)
        try:
            if holder.stdout is None or holder.stdout.readline().strip() != b"pod-ready":
                raise ApptainerUnavailable("the namespace holder did not start (user namespaces?)")
            write_pod_file(work, spec.labels, holder.pid)
            inner = int(Path(f"/proc/{holder.pid}/task/{holder.pid}/children").read_text().split()[0])
            (work / "etc").mkdir()
            (work / "etc" / "hosts").write_text(f"{LOOPBACK} localhost\n")
            (work / "etc" / "resolv.conf").write_text(f"nameserver {LOOPBACK}\n")
            shared = work / "shared"
            shared.mkdir()
            proc = self._process("version", spec, inner, work, ("/probe/markers", shared, True), [])
            try:
                proc.start()
                code = proc.wait(timeout)
                if code is None:
                    proc.kill()
                return code, proc.logs()
            finally:
                proc.close()
        finally:
            _end_holder(holder)
            shutil.rmtree(work, ignore_errors=True)

    def _work_root(self) -> Path:
        """The work root, this user's alone (0700, not a link): a pod's folder in it holds the witness."""
        try:
            return private_folder(self.work_root)
        except UnsafePath as exc:
            raise ApptainerUnavailable(f"{exc} (set HARNESS_PROBE_APPTAINER_WORK to a folder of your own)") from None

    def sweep(self) -> list[str]:
        """Pods whose holder is gone (a killed run): their work directories. A live holder is never touched."""
        removed = []
        try:
            private = self.work_root.is_dir() and private_folder(self.work_root) is not None
        except UnsafePath:
            private = False  # another user's folder: nothing in it is ours to remove
        for pod_file in sorted(self.work_root.glob("*/pod.json")) if private else []:
            try:
                pid = json.loads(pod_file.read_text()).get("holder")
            except (OSError, json.JSONDecodeError, AttributeError):
                continue
            if isinstance(pid, int) and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(pod_file.parent, ignore_errors=True)
                removed.append(f"apptainer pod {pod_file.parent.name}")
        if removed:
            log.warning("removed what runs that no longer exist left behind", objects=removed)
        return removed

    def ensure_sif(self, tag: str) -> Path:
        """The SIF for a content-hash tag: cached, else built from the exported archive that holds that tag."""
        dest = self.sif_cache / sif_name(tag)
        if tag in self._verified:
            return dest
        assert self.image_archives is not None
        manifest = json.loads((self.image_archives / "images.json").read_text())
        entry = next((e for e in manifest["images"].values() if e["tag"] == tag), None)
        if entry is None:
            raise ApptainerUnavailable(f"{self.image_archives}/images.json has no archive for {tag}")
        try:
            private_folder(self.sif_cache, others_may_read=True)
        except UnsafePath as exc:
            raise ApptainerUnavailable(f"{exc} (set HARNESS_PROBE_SIF_CACHE to a folder of your own)") from None
        # Trusted by what it was built from and its digest, never by its name: a cached SIF is used only when its
        # record beside it names this image id and archive digest and the SIF still has the digest recorded.
        if verified_sif(dest, entry):
            self._verified.add(tag)
            return dest
        tmp = dest.with_name(f".{dest.name}.part")
        cmd = build_sif_command(self.apptainer, self.image_archives / entry["archive"], tmp)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise ApptainerUnavailable(f"building {dest.name} failed: {proc.stderr.strip()[-2000:]}")
        os.replace(tmp, dest)
        record_sif(dest, entry)
        self._verified.add(tag)
        return dest

    def _process(
        self,
        role: str,
        spec: ContainerSpec,
        holder: int,
        work: Path,
        shared: tuple[str, Path, bool],
        extra: list[_Mapped],
    ) -> ApptainerProcess:
        files = work / f"{role}-files"
        for path, data in spec.files.items():
            target = files / PurePosixPath(path).relative_to(spec.files_base)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        mapped = [*extra]
        if spec.files:
            mapped.append(_Mapped(spec.files_base, files))
        etc = work / "etc"
        binds = [
            Bind(etc / "hosts", "/etc/hosts"),
            Bind(etc / "resolv.conf", "/etc/resolv.conf"),
            Bind(shared[1], shared[0], read_only=shared[2]),
        ]
        binds += [Bind(m.host, m.container, read_only=False) for m in mapped]
        mapped.append(_Mapped(shared[0], shared[1]))
        env_file = work / f"{role}.env"
        env_file.write_text(env_file_text(spec.environment))
        command = [*(spec.entrypoint or []), *(spec.command or [])]
        cgroups = self.cgroups
        exec_spec = ExecSpec(
            self.ensure_sif(spec.image),
            command,
            binds,
            env_file,
            spec.working_dir,
            use_entrypoint=not spec.entrypoint,
            memory=spec.mem_limit if cgroups else None,
            cpus=spec.cpus if cgroups else None,
            pids=spec.pids_limit if cgroups else None,
        )
        return ApptainerProcess(f"{spec.name}", exec_command(self.apptainer, holder, exec_spec), work, mapped)

    @contextmanager
    def pod(self, spec: PodSpec) -> Iterator[ApptainerPod]:
        work = Path(tempfile.mkdtemp(prefix=f"{spec.name}-", dir=self._work_root()))
        with ExitStack() as stack:
            stack.callback(shutil.rmtree, work, True)
            (work / "etc").mkdir()
            (work / "etc" / "hosts").write_text(f"{LOOPBACK} localhost {PROVIDER_HOST}\n")
            (work / "etc" / "resolv.conf").write_text(f"nameserver {LOOPBACK}\n")
            shared = work / "shared"
            shared.mkdir(mode=0o777)
            holder = subprocess.Popen(holder_command(sys.executable), stdout=subprocess.PIPE, start_new_session=True)
            stack.callback(_end_holder, holder)
            if holder.stdout is None or holder.stdout.readline().strip() != b"pod-ready":
                raise ApptainerUnavailable("the pod's namespace holder did not start (user namespaces?)")
            inner = int(Path(f"/proc/{holder.pid}/task/{holder.pid}/children").read_text().split()[0])
            witness = work / "witness"
            witness.mkdir()
            proxy = self._process(
                "proxy", spec.proxy, inner, work, (spec.shared, shared, True), [_Mapped("/probe/witness", witness)]
            )
            writable = []
            for i, path in enumerate(sorted(spec.writable)):
                d = work / f"w{i}"
                d.mkdir()
                writable.append(_Mapped(path, d))
            harness = self._process("harness", spec.harness, inner, work, (spec.shared, shared, False), writable)
            stack.callback(proxy.close)
            stack.callback(harness.close)
            write_pod_file(work, spec.labels, holder.pid)
            proxy.start()
            proxy.wait_for_log(spec.ready_log, spec.ready_timeout)
            yield ApptainerPod(proxy, harness, spec, self.cgroups)

    def cleanup(self, run_id: str | None = None, spared: dict[str, str] | None = None) -> dict[str, int]:
        """Pods a killed run left: their holder (and so every process in the namespace) and work directory."""
        return cleanup_apptainer_pods(self.work_root, run_id, spared)


def _end_holder(holder: subprocess.Popen[bytes]) -> None:
    # unshare --kill-child: the namespace's processes go with the holder.
    with suppress(ProcessLookupError):
        os.killpg(holder.pid, signal.SIGKILL)
    holder.wait(10)
    if holder.stdout is not None:
        holder.stdout.close()
