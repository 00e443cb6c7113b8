"""Runtime-neutral parts: owner labels (live vs dead runs), DOCKER_HOST redaction, deferred interrupts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from orchestrator.runtime import Owner, create_labels, deferred_interrupts, install_interrupt_handlers, redact_host
from orchestrator.runtime.spec import OWNER_LABEL


def test_labels_name_the_owning_process() -> None:
    owner = Owner.parse(create_labels("r1")[OWNER_LABEL])
    assert owner is not None
    assert owner.pid == os.getpid()
    assert owner == Owner.this_process()
    assert not owner.is_dead(Owner.this_process())


def test_a_finished_process_is_dead_and_another_host_never_is() -> None:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    here = Owner.this_process()
    gone = Owner(here.host, int(proc.stdout), "12345")
    assert gone.is_dead(here)
    assert not Owner("elsewhere-0123456789ab", int(proc.stdout), "1").is_dead(here)
    # A live pid whose start time differs is a reused pid: the run that owned the label is gone.
    assert Owner(here.host, os.getpid(), "1").is_dead(here)


@pytest.mark.parametrize("bad", ["", "nohost", "host/notapid/1", "/1/2"])
def test_unparseable_owner_is_never_swept(bad: str) -> None:
    assert Owner.parse(bad) is None


@pytest.mark.parametrize(
    ("given", "published"),
    [
        (None, None),
        ("unix:///var/run/docker.sock", "unix:///var/run/docker.sock"),
        ("ssh://alice@build.example.com", "ssh://build.example.com"),
        ("ssh://alice:hunter2@build.example.com:2222", "ssh://build.example.com:2222"),
        ("tcp://10.0.0.5:2376?token=secret", "tcp://10.0.0.5:2376"),
        ("alice@host", "host"),
    ],
)
def test_docker_host_is_published_without_credentials(given: str | None, published: str | None) -> None:
    assert redact_host(given) == published


def test_an_interrupt_during_an_engine_step_is_raised_after_it() -> None:
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    install_interrupt_handlers()
    steps: list[str] = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with deferred_interrupts():
                os.kill(os.getpid(), signal.SIGTERM)
                steps.append("created")  # still runs: the interrupt waits for the step's end
                with deferred_interrupts():
                    steps.append("nested")
                steps.append("recorded")
            steps.append("never")
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                pass
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
    assert steps == ["created", "nested", "recorded"]


def test_an_owner_in_another_pid_namespace_is_never_dead() -> None:
    here = Owner.this_process()
    ns = os.readlink("/proc/self/ns/pid")
    assert f"@pidns{''.join(c for c in ns if c.isdigit())}" in here.host
    # Same machine name and machine id, another PID namespace: its pid 1 is not ours to judge, gone or not.
    other = Owner(here.host.replace("@pidns", "@pidns9"), 999_999_999, "1")
    assert not other.is_dead(here)
    assert Owner(here.host, 999_999_999, "1").is_dead(here)  # the negative control: ours, and gone
