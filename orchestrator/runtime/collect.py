"""Bounded, link-safe collection: a container's tar stream and log stream to disk, under one episode's caps."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from orchestrator.runtime.tarstream import BLOCK, CHUNK, MAX_TREE_DEPTH, O_DIR, O_NEW, Finding, Stop, unpack

__all__ = ["MAX_TREE_DEPTH", "CollectLimits", "Collection", "Finding", "FolderRead"]

MAX_FINDINGS = 200  # a harness that plants a million links gets one line saying how many were left off
# The folder a copy starts from (and the one it lands in) is named by the caller and may be reached by a link.
_O_PARENT = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass(frozen=True)
class CollectLimits:
    """Per-episode caps on everything copied out of the containers (native logs, markers, witness, logs)."""

    max_bytes: int = 256 * 1024 * 1024
    max_files: int = 20_000
    seconds: float = 60.0

    def to_json(self) -> dict[str, Any]:
        return {"max_bytes": self.max_bytes, "max_files": self.max_files, "seconds": self.seconds}


@dataclass
class FolderRead:
    """What a copy of one folder would hold, read in place instead of written: its entries' names (files and folders,
    in the order a copy makes them) and the first `keep` bytes of each regular file among its first `names` entries.
    What is deeper is counted as a copy counts it, and not kept."""

    names: int
    keep: int
    copied: bool = False  # the folder itself would have been copied (it is one, reached without a link)
    entries: list[str] = field(default_factory=list)
    files: dict[str, bytearray] = field(default_factory=dict)

    def entry(self, name: str, file: bool = True) -> _Held | None:
        """Note an entry the copy would make; where a file's bytes are kept, when it is among the first `names`."""
        self.entries.append(name)
        if not file or len(self.entries) > self.names:
            return None
        self.files[name] = bytearray()
        return _Held(self.files[name], self.keep)


@dataclass
class _Held:
    """The first `keep` bytes of a file read in place."""

    data: bytearray
    keep: int

    def add(self, piece: bytes) -> None:
        self.data += piece[: self.keep - len(self.data)]


# Where a node lands: a folder on disk (its descriptor, or its path), a folder read in place (the FolderRead itself
# for the folder, (FolderRead,) for its entries), or nowhere (below its entries: counted, not kept).
_Into = int | Path | FolderRead | tuple[FolderRead] | None


@dataclass
class Collection:
    """One episode's collection budget; every copy-out draws on it and records its findings here."""

    limits: CollectLimits = field(default_factory=CollectLimits)
    clock: Callable[[], float] = time.monotonic
    copied: int = 0
    files: int = 0
    findings: list[Finding] = field(default_factory=list)
    findings_dropped: int = 0
    _started: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self._started = self.clock()

    def remaining_seconds(self) -> float:
        return self.limits.seconds - (self.clock() - self._started)

    @contextlib.contextmanager
    def harness_share(self) -> Iterator[None]:
        """Within the block the caps are the harness's share of them: what the harness left (its log, its native
        paths, copied first while its volumes are held) may take at most 5/8 of the bytes, half of the files and 3/4
        of the time. The rest stays for the proxy's witness and markers, copied after the proxy stops: no harness
        may crowd out the evidence of what it did (20,000 files in its HOME used to leave no room for the witness)."""
        whole = self.limits
        self.limits = replace(
            whole, max_bytes=whole.max_bytes * 5 // 8, max_files=whole.max_files // 2, seconds=whole.seconds * 3 / 4
        )
        try:
            yield
        finally:
            self.limits = whole

    def note(self, finding: Finding) -> None:
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(finding)
        else:
            self.findings_dropped += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "limits": self.limits.to_json(),
            "bytes": self.copied,
            "files": self.files,
            "seconds": round(min(self.clock() - self._started, 1e9), 3),
            "findings": [f.to_json() for f in self.findings],
            "findings_dropped": self.findings_dropped,
        }

    def extract(self, chunks: Iterable[bytes], dest: Path, source: str, rooted_names: bool = False) -> None:
        """Unpack a tar stream below `dest`: regular files and folders only, created by us, never through a link.

        `rooted_names`: the engine names the archived folder itself '' and its members `/member` (Podman 4.3 for
        a volume's mount point); they are read as `<folder>/member`, as Docker names them. Only the engine makes
        these names (a file name cannot hold '/'), so this opens no way out of `dest`.
        """
        dest.mkdir(parents=True, exist_ok=True)
        root = os.open(dest, O_DIR)
        try:
            unpack(self, chunks, root, source, rooted_names)
        except Stop as stop:
            self.note(stop.finding)
        finally:
            os.close(root)

    def copy_tree(
        self, src: Path, dest: Path, where: str, counted: bool = True, max_depth: int = MAX_TREE_DEPTH
    ) -> None:
        """Copy a saved file or folder as extract() would: regular files and folders only, never through a link.

        Below src and dest every entry is reached by name from its folder's descriptor (O_NOFOLLOW): no path is
        resolved again per file (a folder may hold 100,000), and a folder swapped for a link is not entered.
        `counted=False`: src itself is not counted as a file (what is below it is), as a run counted neither a log
        that save_log wrote (its bytes only) nor the folder it made to extract native logs into.
        `max_depth`: how many folders deep below src (the collection's one cap, plus the levels above what a run
        collected when src holds it: an episode folder holds native/).
        """
        try:
            folder = os.open(src.parent, _O_PARENT)
        except FileNotFoundError:
            return
        try:
            self._copy_node(folder, src.name, dest.parent, dest.name, where, counted, max_depth=max_depth)
        except Stop as stop:
            self.note(stop.finding)
        finally:
            os.close(folder)

    def read_tree(self, src: Path, where: str, names: int, keep: int) -> FolderRead:
        """copy_tree's walk of the folder `src`, counted and noted exactly as a copy, with nothing written: what the
        copy would hold is read instead (see FolderRead). A folder of many small files costs no inodes this way."""
        read = FolderRead(names, keep)
        try:
            folder = os.open(src.parent, _O_PARENT)
        except FileNotFoundError:
            return read
        try:
            self._copy_node(folder, src.name, read, src.name, where)
        except Stop as stop:
            self.note(stop.finding)
        finally:
            os.close(folder)
        return read

    def _copy_node(
        self,
        folder: int,
        name: str,
        into: _Into,
        dest_name: str,
        where: str,
        counted: bool = True,
        depth: int = 0,
        max_depth: int = MAX_TREE_DEPTH,
    ) -> None:
        try:
            st = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return
        if depth > max_depth:
            # The collection's one depth cap: the recursion below (two descriptors a level) stays bounded with it.
            self.note(Finding("too_deep", where[:500], f"more than {max_depth} folders deep; not copied"))
            return
        if self.remaining_seconds() <= 0:
            raise Stop("time_cap", where, f"collection time cap ({self.limits.seconds:g}s) reached")
        mode = st.st_mode
        if counted:
            if self.files >= self.limits.max_files:
                raise Stop("file_cap", where, f"file count cap ({self.limits.max_files}) reached; the rest not copied")
            self.files += 1
        if stat.S_ISDIR(mode):
            if not isinstance(into, (int, Path)):
                self._read_folder(folder, name, into, dest_name, where, depth, max_depth)
                return
            with _folder(into) as dest:
                os.mkdir(dest_name, dir_fd=dest)
                if (src_dir := self._open_folder(folder, name, where)) is None:
                    return
                try:
                    dest_dir = os.open(dest_name, O_DIR, dir_fd=dest)
                    try:
                        self._copy_children(src_dir, dest_dir, where, depth, max_depth)
                    finally:
                        os.close(dest_dir)
                finally:
                    os.close(src_dir)
        elif stat.S_ISREG(mode):
            if st.st_size > self.limits.max_bytes - self.copied:
                left = self.limits.max_bytes - self.copied
                self.note(
                    Finding("over_cap_file", where, f"{st.st_size} bytes, {left} left of the byte cap; not copied")
                )
                return
            self._copy_file(folder, name, into, dest_name, where)
        else:
            kind = {stat.S_IFLNK: "symlink", stat.S_IFIFO: "fifo", stat.S_IFCHR: "device", stat.S_IFBLK: "device"}
            what = kind.get(stat.S_IFMT(mode), "special")
            target = f" (to {os.readlink(name, dir_fd=folder)[:200]!r})" if what == "symlink" else ""
            self.note(Finding(what, where, f"not a file or folder; not followed or copied{target}"))

    def _open_folder(self, folder: int, name: str, where: str) -> int | None:
        """The folder `name` in `folder`, opened without following a link; None, with the finding noted, if not."""
        try:
            return os.open(name, O_DIR, dir_fd=folder)
        except OSError as exc:
            self.note(Finding("special", where, f"cannot be opened as a folder without a link: {exc.strerror}"))
            return None

    def _copy_children(self, src_dir: int, into: _Into, where: str, depth: int, max_depth: int) -> None:
        for child in sorted(os.listdir(src_dir)):
            self._copy_node(src_dir, child, into, child, f"{where}/{child}", depth=depth + 1, max_depth=max_depth)

    def _read_folder(
        self, folder: int, name: str, into: _Into, dest_name: str, where: str, depth: int, max_depth: int
    ) -> None:
        """A folder of a read in place: where a copy made it, it is noted; its entries are walked as a copy's."""
        if isinstance(into, FolderRead):
            into.copied = True  # as the copy's mkdir, before the folder is opened
        elif isinstance(into, tuple):
            into[0].entry(dest_name, file=False)
        if (src_dir := self._open_folder(folder, name, where)) is None:
            return
        try:
            self._copy_children(src_dir, (into,) if isinstance(into, FolderRead) else None, where, depth, max_depth)
        finally:
            os.close(src_dir)

    def _copy_file(self, folder: int, name: str, into: _Into, dest_name: str, where: str) -> None:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except OSError as exc:
            self.note(Finding("special", where, f"cannot be opened without following a link: {exc.strerror}"))
            return
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                self.note(Finding("special", where, "changed into something other than a file while copied"))
                return
            out, held = -1, None  # written to a file on disk, or (read in place) kept in `held`, or neither
            if isinstance(into, (int, Path)):
                with _folder(into) as dest:
                    out = os.open(dest_name, O_NEW, 0o644, dir_fd=dest)
            elif isinstance(into, tuple):
                held = into[0].entry(dest_name)
            try:
                left = self.limits.max_bytes - self.copied
                while piece := os.read(fd, min(CHUNK, left + 1)):
                    kept = piece[:left]  # the file grew since its size was read: what is past the cap is cut off
                    if out >= 0:
                        os.write(out, kept)
                    elif held is not None:
                        held.add(kept)
                    self.copied += len(kept)
                    left -= len(kept)
                    if len(kept) < len(piece):
                        self.note(
                            Finding("over_cap_file", where, "grew past the byte cap while copied; cut at the cap")
                        )
                        break
            finally:
                if out >= 0:
                    os.close(out)
        finally:
            os.close(fd)

    def save_log(self, chunks: Iterable[bytes], dest: Path, share: float = 0.125) -> None:
        """Write a log stream keeping its head and its tail (at most `share` of the byte cap), marking any cut."""
        cap = max(BLOCK, int(self.limits.max_bytes * share))
        cap = min(cap, max(0, self.limits.max_bytes - self.copied))
        half = cap // 2
        head = bytearray()
        tail: deque[bytes] = deque()
        tail_len = 0
        total = 0
        why = None
        try:
            for chunk in chunks:
                total += len(chunk)
                room = half - len(head)
                if room > 0:
                    head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    tail.append(chunk)
                    tail_len += len(chunk)
                    while tail and tail_len - len(tail[0]) >= cap - half:
                        tail_len -= len(tail.popleft())
                if self.remaining_seconds() <= 0:
                    why = f"the collection time cap ({self.limits.seconds:g}s) was reached while reading the log"
                    break
        except Exception as exc:  # a broken log stream is a finding about this log, not an episode error
            why = f"the log stream broke: {type(exc).__name__}: {exc}"
        body = b"".join(tail)[-(cap - half) :] if cap - half > 0 else b""
        cut = total - len(head) - len(body)
        marker = b""
        while cut > 0:
            # The marker line is in the file, so it is counted against the cap as the log's own bytes are: the
            # tail, then the head, give it room (a longer cut may need one more digit: measured again).
            marker = f"\n[harness-probe: {cut} bytes cut here; log cap {cap} bytes]\n".encode()
            over = len(head) + len(marker) + len(body) - cap
            if over <= 0:
                break
            if over > len(head) + len(body):
                marker = b""  # no room for it at all: the finding alone tells of the cut
                break
            from_body = min(over, len(body))
            body, head = body[from_body:], head[: len(head) - (over - from_body)]
            cut += over
        if cut > 0:
            self.note(Finding("log_cut", dest.name, f"{total} bytes logged, the middle {cut} bytes were cut"))
        with open(dest, "xb") as f:
            for part in (head, marker, body):
                f.write(part)
        if why:
            self.note(Finding("log_incomplete", dest.name, why))
        self.copied += len(head) + len(marker) + len(body)


@contextlib.contextmanager
def _folder(where: int | Path) -> Iterator[int]:
    """A folder's descriptor: one already open (kept open), or the named folder opened for the moment."""
    if isinstance(where, int):
        yield where
        return
    fd = os.open(where, _O_PARENT)
    try:
        yield fd
    finally:
        os.close(fd)
