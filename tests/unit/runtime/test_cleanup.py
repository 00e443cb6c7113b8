"""A run's clean-up: one removal that fails never stops the others, and never replaces what stopped the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docker.errors
import pytest

from orchestrator import suite
from orchestrator.runtime import docker as docker_runtime
from orchestrator.runtime.docker import CleanupIncomplete, Engine


class _Api:
    """The four list calls and three removals `Engine.cleanup` makes; `busy` names refuse removal that often."""

    def __init__(self, busy: dict[str, int]) -> None:
        self.busy = busy
        self.removed: list[str] = []

    def containers(self, **_: Any) -> list[dict[str, Any]]:
        return [{"Id": "c-harness", "Labels": {}}, {"Id": "c-proxy", "Labels": {}}]

    def networks(self, **_: Any) -> list[dict[str, Any]]:
        return []

    def volumes(self, **_: Any) -> dict[str, Any]:
        return {"Volumes": [{"Name": "v-home"}, {"Name": "v-markers"}, {"Name": "v-gone"}]}

    def _remove(self, name: str) -> None:
        if name == "v-gone":
            raise docker.errors.NotFound("no such volume")
        if self.busy.get(name, 0) > 0:
            self.busy[name] -= 1
            raise docker.errors.APIError(f"409 Conflict: remove {name}: volume is in use")
        self.removed.append(name)

    def remove_container(self, cid: str, **_: Any) -> None:
        self._remove(cid)

    def remove_network(self, nid: str) -> None:
        self._remove(nid)

    def remove_volume(self, name: str, **_: Any) -> None:
        self._remove(name)


class _Client:
    def __init__(self, api: _Api) -> None:
        self.api = api


@pytest.fixture(autouse=True)
def _no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docker_runtime, "CLEANUP_RETRY_SECONDS", 0.0)


def test_a_volume_in_use_for_a_moment_is_removed_on_the_second_try_after_the_others() -> None:
    api = _Api({"v-home": 1})
    counts = Engine(_Client(api)).cleanup("run-1")  # type: ignore[arg-type]
    assert api.removed == ["c-harness", "c-proxy", "v-markers", "v-home"]
    assert counts == {"containers": 2, "networks": 0, "volumes": 3}


def test_what_stays_in_use_is_named_after_every_other_removal_was_made() -> None:
    api = _Api({"c-harness": 5, "v-home": 5})
    with pytest.raises(CleanupIncomplete) as err:
        Engine(_Client(api)).cleanup("run-1")  # type: ignore[arg-type]
    assert api.removed == ["c-proxy", "v-markers"]
    assert "container c-harness" in str(err.value) and "volume v-home (409 Conflict" in str(err.value)


def test_a_failing_clean_up_never_replaces_what_stopped_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Stuck:
        def __init__(self) -> None:
            self.cleaned: list[str] = []

        def sweep(self) -> None:
            pass

        def cleanup(self, run_id: str) -> None:
            self.cleaned.append(run_id)
            raise CleanupIncomplete("could not remove: volume v-home (409 Conflict)")

    def interrupted(*_: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(suite, "_run", interrupted)
    engine = Stuck()
    cfg = suite.RunConfig(harnesses=[], scenarios=[], output=tmp_path / "out")
    with pytest.raises(KeyboardInterrupt):
        suite.run_suite(cfg, engine)  # type: ignore[arg-type]
    assert len(engine.cleaned) == 1


def test_apptainer_cleanup_spares_a_pod_whose_owner_lives_unless_forced(tmp_path: Path) -> None:
    from orchestrator.runtime.apptainer_pods import cleanup_apptainer_pods, write_pod_file
    from orchestrator.runtime.spec import OWNER_LABEL, RUN_LABEL, Owner

    owner = Owner.this_process().label()
    (tmp_path / "pod-live").mkdir()
    write_pod_file(tmp_path / "pod-live", {RUN_LABEL: "run-live", OWNER_LABEL: owner}, 2**22 + 1)
    spared: dict[str, str] = {}
    assert cleanup_apptainer_pods(tmp_path, None, spared) == {"pods": 0}
    assert spared == {"run-live": owner}
    assert (tmp_path / "pod-live").is_dir()
    assert cleanup_apptainer_pods(tmp_path, None) == {"pods": 1}  # --force: no spared list
    assert not (tmp_path / "pod-live").exists()
