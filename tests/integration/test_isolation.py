"""The harness container's network: it reaches `provider` and nothing else."""

from __future__ import annotations

import uuid

import pytest
from testcontainers.core.container import DockerContainer

from orchestrator.runtime import ContainerSpec, Engine, create_labels
from tests.integration.conftest import Images, labelled

pytestmark = pytest.mark.docker

_PROBE = """
import socket, sys
def dial(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "open"
    except OSError as exc:
        return type(exc).__name__
print("provider", dial("provider", 8080))
print("outside", dial(sys.argv[1], 8000))
print("dns", dial("example.com", 80))
"""


def test_harness_reaches_only_the_provider(engine: Engine, images: Images) -> None:
    run_id = f"isolation-{uuid.uuid4().hex[:6]}"
    labels = create_labels(run_id)
    # Another host on the engine's default network: reachable from outside our internal network, not from inside.
    with DockerContainer(images.base.tag).with_command("python3 -m http.server 8000") as other:
        other_ip = other.get_docker_client().bridge_ip(other.get_wrapped_container().id)
        with engine.network(f"{run_id}-net", labels) as net:
            proxy = ContainerSpec(
                image=images.proxy.tag,
                name=f"{run_id}-proxy",
                entrypoint=["python3", "-m", "http.server", "8080"],
                network=str(net.name),
                aliases=["provider"],
                labels=labels,
            )
            with engine.container(proxy) as p:
                p.start()
                prober = ContainerSpec(
                    image=images.reference.tag,
                    name=f"{run_id}-harness",
                    command=["python3", "-c", _PROBE, other_ip],
                    user="probe",
                    network=str(net.name),
                    labels=labels,
                )
                with engine.container(prober) as h:
                    h.start()
                    assert h.wait(60) == 0
                    out = h.logs().decode()
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    assert lines["provider"] == "open"
    assert lines["outside"] != "open", out
    assert lines["dns"] == "gaierror", out
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, run_id) == []
