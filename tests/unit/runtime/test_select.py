"""Runtime selection by registry: a named runtime is used or is an error, never a silent fallback; with nothing
named the fallback order applies; `run` and `doctor` decide alike (one selection, from one RuntimeSettings)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import orchestrator.runtime.select as select
from orchestrator.cli import app
from orchestrator.errors import EngineUnavailable, UnknownRuntime
from orchestrator.runtime.discover import RuntimeStatus
from orchestrator.runtime.pod import PodRuntime
from orchestrator.runtime.settings import RuntimeSettings
from tests.fakes.runtime import FakeRuntime, as_runtime

NOWHERE = "unix:///nonexistent/harness-probe.sock"


@pytest.fixture
def tried(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The backends as fakes: docker does not answer, podman and apptainer do; records which were asked."""
    asked: list[str] = []

    def backend(name: str, answers: bool) -> Callable[[RuntimeSettings], PodRuntime]:
        def open_(settings: RuntimeSettings) -> PodRuntime:
            asked.append(name)
            return _backend(name, answers)(settings)

        return open_

    fakes = {name: backend(name, name != "docker") for name in ("docker", "podman", "apptainer")}
    monkeypatch.setattr(select, "BACKENDS", fakes)
    return asked


def _settings(**env: str) -> RuntimeSettings:
    return RuntimeSettings.from_environ(env)


def test_with_nothing_named_the_first_that_answers_in_the_fallback_order_is_taken(tried: list[str]) -> None:
    chosen = select.open_engine(_settings())
    assert (chosen.runtime.name, chosen.named_by, tried) == ("podman", None, ["docker", "podman"])
    assert chosen.why == "first that answers of docker, podman"


@pytest.mark.parametrize(
    ("env", "named_by"),
    [
        ({"DOCKER_HOST": NOWHERE}, f"DOCKER_HOST={NOWHERE}"),
        ({"HARNESS_PROBE_RUNTIME": "docker"}, "HARNESS_PROBE_RUNTIME=docker"),
        ({"HARNESS_PROBE_RUNTIME": "docker", "CONTAINER_HOST": NOWHERE}, "HARNESS_PROBE_RUNTIME=docker"),
    ],
)
def test_a_named_runtime_that_does_not_answer_is_an_error_never_a_fallback(
    tried: list[str], env: dict[str, str], named_by: str
) -> None:
    with pytest.raises(EngineUnavailable) as refused:
        select.open_engine(_settings(**env))
    assert f"docker was named by {named_by} and does not answer" in str(refused.value)
    assert tried == ["docker"]  # podman, which answers, was not tried


def test_the_runtime_flag_is_named_as_the_flag(tried: list[str]) -> None:
    with pytest.raises(EngineUnavailable, match="docker was named by --runtime docker"):
        select.open_engine(RuntimeSettings.from_environ({}, runtime="docker"))


def test_container_host_names_podman(tried: list[str]) -> None:
    chosen = select.open_engine(_settings(CONTAINER_HOST="unix:///run/podman.sock"))
    assert (chosen.runtime.name, chosen.named_by) == ("podman", "CONTAINER_HOST=unix:///run/podman.sock")


def test_an_unknown_runtime_name_lists_the_known_ones() -> None:
    expected = r"unknown runtime 'dokker' \(HARNESS_PROBE_RUNTIME=dokker; one of: docker"
    with pytest.raises(UnknownRuntime, match=expected):
        select.open_engine(_settings(HARNESS_PROBE_RUNTIME="dokker"))


def _status(name: str, answers: bool) -> RuntimeStatus:
    return RuntimeStatus(name, f"/usr/bin/{name}", answers)


@pytest.mark.parametrize(
    ("env", "statuses", "expected"),
    [
        ({}, [("docker", False), ("podman", True), ("apptainer", True)], "podman"),
        ({}, [("docker", False), ("podman", False), ("apptainer", True)], None),  # apptainer is no fallback
        ({"DOCKER_HOST": NOWHERE}, [("docker", False), ("podman", True), ("apptainer", False)], None),
        (
            {"HARNESS_PROBE_RUNTIME": "apptainer"},
            [("docker", True), ("podman", True), ("apptainer", True)],
            "apptainer",
        ),
    ],
)
def test_doctor_decides_as_run_does(
    tried: list[str], env: dict[str, str], statuses: list[tuple[str, bool]], expected: str | None
) -> None:
    found = [_status(n, a) for n, a in statuses]
    chosen, _why = select.decide(_settings(**env), found)
    assert (chosen.name if chosen else None) == expected
    # The same settings and the same answers, through run's selection:
    answering = {n for n, a in statuses if a}
    select.BACKENDS.update({n: _backend(n, n in answering) for n in select.BACKENDS})
    try:
        ran: str | None = select.open_engine(_settings(**env)).runtime.name
    except EngineUnavailable:
        ran = None
    assert ran == expected


def _backend(name: str, answers: bool) -> Callable[[RuntimeSettings], PodRuntime]:
    def open_(settings: RuntimeSettings) -> PodRuntime:
        if not answers:
            raise EngineUnavailable(f"{name} does not answer")
        fake = FakeRuntime()
        fake.name = name
        return as_runtime(fake)

    return open_


def test_run_with_docker_host_at_nothing_exits_2_naming_docker_host(tmp_path: Path) -> None:
    # Real backends: nothing answers at NOWHERE; before, the run fell back to Podman and exited 0.
    res = CliRunner().invoke(
        app, ["run", "-H", "reference", "-s", "tool_success", "-o", str(tmp_path / "out")], env={"DOCKER_HOST": NOWHERE}
    )
    assert res.exit_code == 2, res.output
    assert f"harness-probe: EngineUnavailable: docker was named by DOCKER_HOST={NOWHERE} and does not answer" in (
        res.output
    )
    assert not (tmp_path / "out").exists()


def test_doctor_with_docker_host_at_nothing_agrees_with_run() -> None:
    res = CliRunner().invoke(app, ["doctor"], env={"DOCKER_HOST": NOWHERE})
    assert res.exit_code == 2, res.output
    assert f"default runtime: none (docker was named by DOCKER_HOST={NOWHERE} and does not answer)" in res.output
    assert "docker: does not answer" in res.output


def test_run_with_a_bad_runtime_name_is_a_named_input_error(tmp_path: Path) -> None:
    # --runtime (and HARNESS_PROBE_RUNTIME, its environment form) lists its choices, so the option parser names
    # the bad value before anything starts; the selection's own UnknownRuntime is tested above.
    args = ["run", "-H", "reference", "-s", "tool_success", "-o", str(tmp_path / "out")]
    for extra, env in ((["--runtime", "dokker"], {}), ([], {"HARNESS_PROBE_RUNTIME": "dokker"})):
        res = CliRunner().invoke(app, [*args, *extra], env=env)
        assert res.exit_code == 2, res.output
        flat = " ".join(res.output.replace("│", " ").split())
        assert "'dokker' is not one of 'docker', 'podman', 'apptainer'" in flat, res.output
    assert not (tmp_path / "out").exists()


def test_doctor_names_the_settings_run_would_refuse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import orchestrator.cli.doctor as doctor

    # A runtime that answers, so only the settings can make the exit 2.
    monkeypatch.setattr(doctor, "discover", lambda _order, _env: [_status("docker", True)])
    monkeypatch.setattr(doctor, "decide", lambda _settings, found: (found[0], "first that answers"))
    fine = CliRunner().invoke(app, ["doctor"], env={"HARNESS_PROBE_EXTRA_CA": None, "PIP_CERT": None})
    assert fine.exit_code == 0, fine.output
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("not a certificate")
    bad = {"HARNESS_PROBE_EXTRA_CA": "/nonexistent/ca.pem", "HARNESS_PROBE_IMAGE_ARCHIVES": str(not_pem)}
    res = CliRunner().invoke(app, ["doctor"], env={**bad, "PIP_CERT": str(not_pem)})
    assert res.exit_code == 2, res.output
    # Not PIP_CERT's bundle in its place: a build refuses the named CA, it does not fall back.
    assert "build CA: refused (below)" in res.output
    assert "setting refused: HARNESS_PROBE_EXTRA_CA='/nonexistent/ca.pem' is not a file" in res.output
    assert f"setting refused: HARNESS_PROBE_IMAGE_ARCHIVES='{not_pem}' is not a folder" in res.output
    doubt = CliRunner().invoke(app, ["doctor", "--json"], env={"HARNESS_PROBE_EXTRA_CA": str(not_pem)})
    assert doubt.exit_code == 0, doubt.output
    assert "holds no PEM certificate" in doubt.output
