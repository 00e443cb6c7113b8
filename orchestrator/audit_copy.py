"""The audit's copy of one saved episode's evidence, made as a run collects it, its markers read in place.

The verdicts of an audit rest on the files it copied (its summary hashes them), so the copy comes before any reading.
The markers folder is the exception: up to 20,000 small files, an inode each to copy, which on some disks is most of a
large audit's time, for a name -> content map the checks read. It is walked as a copy would walk it (the same
files counted in the same order under the same caps, the same findings) with nothing written, and what a copy would
give the checks is written as one file, `markers.json` (orchestrator/evidence/markers.py): read once, from the saved
folder, and hashed as the audit's own copy is.
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.atif import ATIF_NAME
from orchestrator.evidence.jsonread import MAX_FILE_BYTES
from orchestrator.evidence.markers import MARKER_BYTES, MARKERS_FILE, MAX_MARKERS, select, write_markers
from orchestrator.runtime.collect import Collection, CollectLimits, Finding

__all__ = ["copy_evidence"]

# Evidence copied into the audit directory, so its summary hashes the same files the verdicts rest on. What a run
# collected out of its containers is copied under the caps its collection drew on, counted as it counted them and
# in its order, so an untouched run's evidence is copied whole; what a run writes itself (the rollout, of
# any size a reader takes) is copied file by file, each up to the JSON reader's cap.
# A transport twin (`run --compare-stream`) is an episode folder of its own inside the episode's: copied whole.
_COLLECTED = ("harness.log", "native", "proxy.log", "witness.jsonl", "twin")
_UNCOUNTED = ("harness.log", "native", "proxy.log", "twin")  # a run counted what they hold, not themselves
_MARKERS = "markers"  # collected last: read in place after the others, not copied
_WRITTEN = ("rollout.json", "runtime.json", "scenario.json", ATIF_NAME)


def copy_evidence(src: Path, dest: Path, limits: CollectLimits) -> Collection:
    """Copy `src`'s evidence into the new folder `dest`; the collection record of what was copied and met.

    The markers folder becomes dest/markers.json. An audit's own output has no folder but that file: a later audit
    of it copies the file as it copies the rollout (the folder, where both are saved, is read and the file named)."""
    dest.mkdir(parents=True)
    collection = Collection(limits)
    for name in _COLLECTED:
        collection.copy_tree(src / name, dest / name, name, counted=name not in _UNCOUNTED)
    markers = collection.read_tree(src / _MARKERS, _MARKERS, MAX_MARKERS, MARKER_BYTES + 1)
    written: tuple[str, ...] = _WRITTEN
    if markers.copied:
        write_markers(dest / MARKERS_FILE, select(markers.entries, markers.files))
        if os.path.lexists(src / MARKERS_FILE):
            collection.note(Finding("special", MARKERS_FILE, "not used: the markers folder beside it is read"))
    else:
        written = (*_WRITTEN, MARKERS_FILE)
    # Each under a cap of its own: what the JSON reader would refuse whole is not copied either.
    for name in written:
        alone = Collection(CollectLimits(max_bytes=MAX_FILE_BYTES, max_files=1))
        alone.copy_tree(src / name, dest / name, name)
        for finding in alone.findings:
            collection.note(finding)
    return collection
