"""The extractor against hostile archives: links, special files, `..`, huge sparse files and every cap."""

from __future__ import annotations

import io
import os
import re
import resource
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

import orchestrator.runtime.collect as collect_mod
from orchestrator.runtime.collect import Collection, CollectLimits


def _tar(*members: tuple[tarfile.TarInfo, bytes | None], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _member(
    name: str, kind: bytes = tarfile.REGTYPE, data: bytes | None = None, link: str = ""
) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    if data is not None:
        info.size = len(data)
    return info, data


def _chunks(data: bytes, size: int = 1000) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def _kinds(c: Collection) -> list[tuple[str, str]]:
    return [(f.kind, f.path) for f in c.findings]


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(root.rglob("*")):
        assert not p.is_symlink(), p
        if p.is_file():
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def test_regular_files_and_folders_are_copied(tmp_path: Path) -> None:
    data = _tar(_member("d", tarfile.DIRTYPE), _member("d/a.json", data=b"{}"), _member("d/sub/b", data=b"x" * 5000))
    c = Collection()
    c.extract(_chunks(data), tmp_path, "/home/probe/d")
    assert _files(tmp_path) == {"d/a.json": b"{}", "d/sub/b": b"x" * 5000}
    assert c.findings == [] and c.copied == 5002 and c.files == 3


@pytest.mark.parametrize(
    ("member", "kind"),
    [
        (_member("d/abs", tarfile.SYMTYPE, link="/etc/shadow"), "symlink"),
        (_member("d/rel", tarfile.SYMTYPE, link="../../../../etc/passwd"), "symlink"),
        (_member("d/up", tarfile.SYMTYPE, link=".."), "symlink"),
        (_member("d/hard", tarfile.LNKTYPE, link="d/a.json"), "hardlink"),
        (_member("d/fifo", tarfile.FIFOTYPE), "fifo"),
        (_member("d/null", tarfile.CHRTYPE), "device"),
        (_member("d/sda", tarfile.BLKTYPE), "device"),
        (_member("../escape", data=b"evil"), "unsafe_name"),
        (_member("/etc/evil", data=b"evil"), "unsafe_name"),
        (_member("d/../../evil", data=b"evil"), "unsafe_name"),
    ],
)
def test_links_special_files_and_unsafe_names_are_findings(
    tmp_path: Path, member: tuple[tarfile.TarInfo, bytes | None], kind: str
) -> None:
    dest = tmp_path / "out"
    data = _tar(_member("d", tarfile.DIRTYPE), member, _member("d/a.json", data=b"{}"))
    c = Collection()
    c.extract(_chunks(data), dest, "/p/d")
    assert _kinds(c) == [(kind, f"/p/{member[0].name}")]
    assert _files(dest) == {"d/a.json": b"{}"}  # the rest is still collected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing outside dest


def test_a_hard_link_to_a_file_already_collected_is_that_file_again(tmp_path: Path) -> None:
    # The engine archives a file with two names once, the later name as a link to the first: an honest harness's
    # rollout.json that it also linked as a backup must not be lost under its own name.
    data = _tar(
        _member("d", tarfile.DIRTYPE),
        _member("d/a-backup.json", data=b'{"r":1}'),
        _member("d/rollout.json", tarfile.LNKTYPE, link="d/a-backup.json"),
    )
    c = Collection()
    c.extract(_chunks(data), tmp_path, "/home/probe/d")
    assert _files(tmp_path) == {"d/a-backup.json": b'{"r":1}', "d/rollout.json": b'{"r":1}'}
    assert c.findings == [] and c.copied == 14 and c.files == 3
    # Counted against the caps as a copy is: past the byte cap the second name is a finding, not a copy.
    small = Collection(CollectLimits(max_bytes=10))
    small.extract(_chunks(data), tmp_path / "small", "/home/probe/d")
    assert _files(tmp_path / "small") == {"d/a-backup.json": b'{"r":1}'}
    assert _kinds(small) == [("over_cap_file", "/home/probe/d/rollout.json")]


def test_a_link_planted_first_is_not_written_through(tmp_path: Path) -> None:
    # `d/x -> /tmp/...` then `d/x/file`: the folder walk must not follow the (never created) link.
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "out"
    dest.mkdir()
    os.symlink(outside, dest / "x")  # as if an earlier copy had left one
    data = _tar(_member("x/file", data=b"evil"), _member("ok", data=b"1"))
    c = Collection()
    c.extract(_chunks(data), dest, "/p/x")
    assert list(outside.iterdir()) == []
    assert [f.kind for f in c.findings] == ["conflict"]
    assert (dest / "ok").read_bytes() == b"1"


def test_duplicate_names_do_not_overwrite(tmp_path: Path) -> None:
    data = _tar(_member("a", data=b"first"), _member("a", data=b"second"), _member("b", data=b"3"))
    c = Collection()
    c.extract(_chunks(data), tmp_path, "/p/a")
    assert (tmp_path / "a").read_bytes() == b"first" and (tmp_path / "b").read_bytes() == b"3"
    assert [f.kind for f in c.findings] == ["duplicate"]


def test_file_count_cap(tmp_path: Path) -> None:
    data = _tar(*(_member(f"f{i}", data=b"x") for i in range(10)))
    c = Collection(CollectLimits(max_files=4))
    c.extract(_chunks(data), tmp_path, "/p/f")
    assert len(list(tmp_path.iterdir())) == 4
    assert [f.kind for f in c.findings] == ["file_cap"]


def test_what_the_harness_left_cannot_crowd_out_what_the_proxy_witnessed(tmp_path: Path) -> None:
    """The harness's files take at most their share of the caps; the witness and markers, copied after them, get
    the rest (a harness that left 20,000 files used to leave no room for the witness)."""
    c = Collection(CollectLimits(max_files=8, max_bytes=16 * 1024))
    with c.harness_share():
        c.extract(_chunks(_tar(_member("big", data=b"y" * 11 * 1024))), tmp_path / "native2", "/home/big")
        c.extract(_chunks(_tar(*(_member(f"h{i}", data=b"x") for i in range(10)))), tmp_path / "native", "/home")
    assert not (tmp_path / "native2" / "big").exists()  # past 5/8 of the bytes
    assert c.files == 4  # half of the files (the big one counted)
    assert {"over_cap_file", "file_cap"} <= {f.kind for f in c.findings}
    c.extract(_chunks(_tar(_member("witness.jsonl", data=b"w" * 8 * 1024))), tmp_path, "/probe/witness/witness.jsonl")
    c.extract(_chunks(_tar(*(_member(f"m{i}", data=b"t") for i in range(3)))), tmp_path / "markers", "/probe/markers")
    assert (tmp_path / "witness.jsonl").stat().st_size == 8 * 1024
    assert len(list((tmp_path / "markers").iterdir())) == 3
    assert c.to_json()["limits"] == {"max_bytes": 16 * 1024, "max_files": 8, "seconds": 60.0}  # the whole caps


def test_byte_cap_stops_at_an_over_cap_file(tmp_path: Path) -> None:
    data = _tar(_member("a", data=b"x" * 600), _member("b", data=b"y" * 600), _member("c", data=b"z"))
    c = Collection(CollectLimits(max_bytes=1000))
    c.extract(_chunks(data), tmp_path, "/p/a")
    assert _files(tmp_path) == {"a": b"x" * 600}
    assert [f.kind for f in c.findings] == ["over_cap_file", "byte_cap"]
    assert c.copied == 600


def _endless_sparse(size: int, counter: list[int]) -> Iterator[bytes]:
    """A tar stream announcing one `size`-byte file, then zeros for ever (what the engine sends for a sparse one)."""
    info = tarfile.TarInfo("big")
    info.size = size
    header = info.tobuf(tarfile.PAX_FORMAT)
    counter[0] += len(header)
    yield header
    zeros = bytes(1 << 20)
    while True:
        counter[0] += len(zeros)
        yield zeros


def test_sparse_100_gib_file_is_not_read(tmp_path: Path) -> None:
    read = [0]
    c = Collection()
    c.extract(_endless_sparse(100 << 30, read), tmp_path, "/p/big")
    assert [f.kind for f in c.findings] == ["over_cap_file", "byte_cap"]
    assert read[0] < 2 << 20  # the header and at most one chunk: the data is never read
    assert list(tmp_path.iterdir()) == []


def test_a_lying_header_cannot_make_us_read_past_the_cap(tmp_path: Path) -> None:
    # A file within the cap but then an endless run of a member type we skip: the raw cap ends it.
    info = tarfile.TarInfo("weird")
    info.type = b"Z"
    info.size = 1 << 40
    stream = [info.tobuf(tarfile.GNU_FORMAT)]
    read = [0]

    def gen() -> Iterator[bytes]:
        yield from stream
        while True:
            read[0] += 1 << 16
            yield bytes(1 << 16)

    c = Collection(CollectLimits(max_bytes=1 << 20, max_files=10))
    c.extract(gen(), tmp_path, "/p/weird")
    assert [f.kind for f in c.findings] == ["special", "byte_cap"]
    assert read[0] <= (1 << 20) + (1 << 17)


def test_time_cap(tmp_path: Path) -> None:
    now = [0.0]

    def slow() -> Iterator[bytes]:
        data = _tar(*(_member(f"f{i}", data=b"x" * 100) for i in range(50)))
        for piece in _chunks(data, 512):
            now[0] += 1.0
            yield piece

    c = Collection(CollectLimits(seconds=10), clock=lambda: now[0])
    c.extract(slow(), tmp_path, "/p/f")
    assert [f.kind for f in c.findings] == ["time_cap"]
    assert 0 < len(list(tmp_path.iterdir())) < 50


def test_truncated_and_garbage_archives_are_findings(tmp_path: Path) -> None:
    data = _tar(_member("a", data=b"x" * 2000))
    c = Collection()
    c.extract(_chunks(data[:1200]), tmp_path / "t", "/p/a")
    c.extract(_chunks(b"\x01" * 4096), tmp_path / "g", "/p/g")
    assert [f.kind for f in c.findings] == ["malformed_archive", "malformed_archive"]


def test_real_tarfile_long_names_and_gnu_format(tmp_path: Path) -> None:
    long = "d/" + "n" * 150 + "/" + "f" * 120
    for fmt in (tarfile.PAX_FORMAT, tarfile.GNU_FORMAT):
        dest = tmp_path / str(fmt)
        c = Collection()
        c.extract(_chunks(_tar(_member(long, data=b"ok"), fmt=fmt)), dest, "/p/d")
        assert _files(dest) == {long: b"ok"} and c.findings == []


def test_logs_keep_head_and_tail_and_mark_the_cut(tmp_path: Path) -> None:
    c = Collection(CollectLimits(max_bytes=8000))
    lines = [f"line {i}\n".encode() for i in range(10_000)]
    c.save_log(iter(lines), tmp_path / "harness.log", share=0.125)  # 1000 bytes kept
    text = (tmp_path / "harness.log").read_bytes()
    assert text.startswith(b"line 0\n") and text.endswith(b"line 9999\n")
    assert b"bytes cut here" in text and len(text) < 1200
    assert [f.kind for f in c.findings] == ["log_cut"]
    small = Collection()
    small.save_log(iter([b"a\n", b"b\n"]), tmp_path / "small.log")
    assert (tmp_path / "small.log").read_bytes() == b"a\nb\n" and small.findings == []


@pytest.mark.parametrize("left", [0, 40, 90, 700, 5000, 100_000])
def test_a_cut_logs_marker_counts_against_the_cap(tmp_path: Path, left: int) -> None:
    # The cap a run gave its logs is what its audit recounts from the files: the marker line is in the file, so
    # it is within the cap and counted, and what it says was cut is exactly what is not in the file.
    c = Collection(CollectLimits(max_bytes=200_000))
    c.copied = 200_000 - left  # what earlier copies drew on the budget
    lines = [f"line {i}\n".encode() for i in range(10_000)]
    total = sum(map(len, lines))
    c.save_log(iter(lines), tmp_path / "harness.log", share=0.125)
    text = (tmp_path / "harness.log").read_bytes()
    cap = min(max(512, 25_000), left)
    assert len(text) <= cap
    assert c.copied == 200_000 - left + len(text) <= 200_000
    assert [f.kind for f in c.findings] == ["log_cut"]
    cut = int(c.findings[0].reason.split("the middle ")[1].split()[0])
    marker = re.search(rb"\n\[harness-probe: (\d+) bytes cut here; log cap (\d+) bytes\]\n", text)
    if marker is None:  # no room for the line itself: the finding tells of the cut
        assert len(text) + cut == total and len(text) < 80
    else:
        assert int(marker.group(1)) == cut and int(marker.group(2)) == cap
        assert len(text) - len(marker.group(0)) + cut == total
        assert text.startswith(b"line 0") or marker.start() == 0
        assert text.endswith(b"line 9999\n") or marker.end() == len(text)


def test_host_rss_stays_small_for_a_huge_file(tmp_path: Path) -> None:
    # In a fresh interpreter, so the peak RSS measured is the extractor's alone.
    code = f"""
import resource, tarfile
from pathlib import Path
from orchestrator.runtime.collect import Collection, CollectLimits
info = tarfile.TarInfo("big"); info.size = 200 << 20
def gen():
    yield info.tobuf(tarfile.PAX_FORMAT)
    for _ in range(201):
        yield bytes(1 << 20)
c = Collection()
c.extract(gen(), Path({str(tmp_path)!r}), "/p/big")
# VmHWM: this process image's own peak (ru_maxrss can carry the forking parent's peak across exec).
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(hwm, c.copied)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    rss_kib, copied = int(out[0]), int(out[1])
    assert copied == 200 << 20
    assert rss_kib < 150 * 1024, f"peak RSS {rss_kib} KiB"  # under the 200 MiB written: it was streamed
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0


def test_copy_tree_copies_every_byte(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    data = os.urandom(300_000)
    (src / "big.bin").write_bytes(data)
    (src / "sub" / "empty").write_bytes(b"")
    (src / "sub" / "small").write_bytes(b"x")
    c = Collection(CollectLimits(max_bytes=300_001, max_files=10))
    c.copy_tree(src, tmp_path / "dest", "src")
    assert _files(tmp_path / "dest") == {"big.bin": data, "sub/empty": b"", "sub/small": b"x"}
    assert (c.copied, c.files, c.findings) == (300_001, 5, [])


def test_a_file_grown_past_the_cap_while_copied_is_cut_at_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its size was read as under the cap; by the time it is copied it holds more.
    (tmp_path / "src").mkdir()
    data = os.urandom(200_000)
    (tmp_path / "src" / "log").write_bytes(data)
    real_stat = os.stat

    def stale(*args: object, **kwargs: object) -> object:
        st = real_stat(*args, **kwargs)  # type: ignore[arg-type]
        return SimpleNamespace(st_mode=st.st_mode, st_size=10) if str(args[0]) == "log" else st

    monkeypatch.setattr(collect_mod.os, "stat", stale)
    c = Collection(CollectLimits(max_bytes=150_000, max_files=10))
    c.copy_tree(tmp_path / "src", tmp_path / "dest", "src")
    assert (tmp_path / "dest" / "log").read_bytes() == data[:150_000]
    assert c.copied == 150_000
    assert _kinds(c) == [("over_cap_file", "src/log")]


def test_a_tree_past_the_depth_cap_is_one_finding_and_not_copied(tmp_path: Path) -> None:
    from orchestrator.runtime.collect import MAX_TREE_DEPTH

    deep = "/".join(["d"] * 1100)
    kept = "/".join(["k"] * MAX_TREE_DEPTH)  # the negative control: a file exactly at the cap is copied
    members = [_member("/".join(["d"] * n), tarfile.DIRTYPE) for n in range(1, 1101)]
    data = _tar(*members, _member(f"{deep}/rollout.json", data=b"{}"), _member(kept, data=b"at the cap"))
    c = Collection()
    c.extract(_chunks(data, 1 << 16), tmp_path, "/p")
    [finding] = c.findings
    assert finding.kind == "too_deep" and finding.path.endswith("/" + "/".join(["d"] * (MAX_TREE_DEPTH + 1)))
    assert f"more than {MAX_TREE_DEPTH} folders deep" in finding.reason
    assert (tmp_path / kept).read_bytes() == b"at the cap"
    assert not any(p.name == "rollout.json" for p in tmp_path.rglob("*"))
