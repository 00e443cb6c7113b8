"""The composite action's command assembly (orchestrator/ci/action.py): inputs are hostile, argv is exact."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.ci.action import INPUTS, ActionError, Leg, _run_leg, assemble, main, read_inputs
from orchestrator.resources import checkout_root

EV = Path("/ev")


def _inputs(**values: str) -> dict[str, str]:
    return {name: values.get(name.replace("-", "_"), "") for name in INPUTS}


def test_one_leg_per_harness_with_its_own_options(tmp_path: Path) -> None:
    (tmp_path / "pkg.tgz").write_bytes(b"x")
    legs = assemble(
        _inputs(
            harness="pi, hermes",
            scenario="tool_success retry_429",
            harness_version="hermes=0.18.2",
            harness_source="pi=pkg.tgz",
            args="--timeout 600",
        ),
        tmp_path,
        EV,
    )
    assert [(leg.harness, leg.runtime, leg.folder) for leg in legs] == [
        ("pi", "docker", EV / "pi-docker"),
        ("hermes", "docker", EV / "hermes-docker"),
    ]
    base = ["--log-format", "json", "run"]
    scen = ["-s", "tool_success", "-s", "retry_429"]
    assert legs[0].argv == ["harness-probe", *base, "-H", "pi", "-o", "/ev/pi-docker/run", *scen,
                            "--harness-source", str(tmp_path / "pkg.tgz"), "--timeout", "600"]  # fmt: skip
    assert legs[1].argv == ["harness-probe", *base, "-H", "hermes", "-o", "/ev/hermes-docker/run", *scen,
                            "--harness-version", "0.18.2", "--timeout", "600"]  # fmt: skip


def test_runtime_other_than_docker_is_passed() -> None:
    (leg,) = assemble(_inputs(harness="reference", runtime="podman"), Path("."), EV)
    assert leg.argv[-2:] == ["--runtime", "podman"] and leg.folder == EV / "reference-podman"


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({}, "name at least one harness"),
        ({"harness": "pi; rm -rf /"}, "input harness"),
        ({"harness": "--help"}, "input harness"),
        ({"harness": "$(id)"}, "input harness"),
        ({"harness": "pi pi"}, "named twice"),
        ({"harness": "pi", "runtime": "docker --privileged"}, "input runtime"),
        ({"harness": "pi", "scenario": "-o/etc"}, "input scenario"),
        ({"harness": "pi", "scenario": "`id`"}, "input scenario"),
        ({"harness": "pi", "harness_version": "--rebuild"}, "input harness-version"),
        ({"harness": "pi", "harness_version": "0.1;id"}, "input harness-version"),
        ({"harness": "pi codex", "harness_version": "0.72.1"}, "must name its harness"),
        ({"harness": "pi", "harness_version": "codex=1.0"}, "not one of the harnesses"),
        ({"harness": "pi", "harness_source": "no/such/dir"}, "does not exist"),
        ({"harness": "pi", "args": "-o /tmp/elsewhere"}, "set by the action itself"),
        ({"harness": "pi", "args": "--output=/x"}, "set by the action itself"),
        ({"harness": "pi", "args": "-H codex"}, "set by the action itself"),
        ({"harness": "pi", "args": "'unclosed"}, "not shell words"),
        # Attached short options, clusters and long --opt=value forms of the action's own options.
        ({"harness": "pi", "args": "-o/tmp/elsewhere"}, "-o is set by the action itself"),
        ({"harness": "pi", "args": "-Hcodex"}, "-H is set by the action itself"),
        ({"harness": "pi", "args": "-hHcodex"}, "-H is set by the action itself"),
        ({"harness": "pi", "args": "--harness=codex"}, "--harness is set by the action itself"),
        ({"harness": "pi", "args": "--log-format=human"}, "--log-format is set by the action itself"),
        ({"harness": "pi", "args": "-a 'model=x\n::error::injected'"}, "control character"),
    ],
)
def test_hostile_or_wrong_inputs_are_refused_by_name(values: dict[str, str], named: str) -> None:
    with pytest.raises(ActionError, match=named):
        assemble(_inputs(**values), Path("."), EV)


def test_values_attached_to_other_short_options_are_not_read_as_own_options() -> None:
    (leg,) = assemble(_inputs(harness="pi", args="-stool_success -amodel=-ox -j2"), Path("."), EV)
    assert leg.argv[-3:] == ["-stool_success", "-amodel=-ox", "-j2"]


def test_group_title_cannot_start_a_workflow_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A line break in the logged command would make the runner read the next stdout line as a workflow command.
    leg = Leg("pi", "docker", tmp_path / "leg", ["/bin/true", "a\n::error::x", "50%\r"])
    assert _run_leg(leg) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["::group::/bin/true 'a%0A::error::x' '50%25%0D'", "::endgroup::"]


def test_shell_metacharacters_in_args_stay_single_argv_words() -> None:
    (leg,) = assemble(_inputs(harness="pi", args="-a 'x=$(id); `id` | tee /x'"), Path("."), EV)
    assert leg.argv[-2:] == ["-a", "x=$(id); `id` | tee /x"]  # one word each: no shell ever reads them


def test_action_yml_passes_every_input_through_env_never_into_a_script() -> None:
    root = checkout_root()
    assert root is not None
    action = yaml.safe_load((root / "action.yml").read_text())
    steps = action["runs"]["steps"]
    for step in steps:
        assert "${{ inputs." not in step.get("run", ""), step.get("name")
    probe = next(s for s in steps if s.get("id") == "probe")
    assert probe["env"] == {var: f"${{{{ inputs.{name} }}}}" for name, var in INPUTS.items()}
    assert set(INPUTS) <= set(action["inputs"])
    assert "-I -m orchestrator.ci.action" in probe["run"]  # the caller's checkout is never on sys.path


def test_main_runs_each_leg_writes_leg_json_summary_and_outputs(tmp_path: Path) -> None:
    # A stand-in executable recording its argv: main's own work (legs, records, outputs) is what is tested here.
    fake = tmp_path / "fake-hp"
    fake.write_text(f"#!{sys.executable}\nimport sys, json\nprint(json.dumps(sys.argv[1:]))\n"
                    "sys.exit(1 if 'run' in sys.argv else 0)\n")  # fmt: skip
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    env = {"HP_HARNESS": "pi", "HP_EVIDENCE": str(tmp_path / "ev"), "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_OUTPUT": str(output), "GITHUB_WORKSPACE": str(tmp_path)}  # fmt: skip
    assert main(env, exe=str(fake)) == 1
    leg = json.loads((tmp_path / "ev/pi-docker/leg.json").read_text())
    assert leg == {"schema": "ci-leg/v1", "harness": "pi", "runtime": "docker", "exit_code": 1}
    assert json.loads(summary.read_text()) == ["ci", "report", str(tmp_path / "ev/pi-docker")]
    assert output.read_text() == f"evidence={tmp_path / 'ev'}\nexit-code=1\n"
    assert main({**env, "HP_FAIL_ON": "error", "HP_EVIDENCE": str(tmp_path / "ev2")}, exe=str(fake)) == 0
    assert main({**env, "HP_HARNESS": "pi;id"}, exe=str(fake)) == 2


def test_read_inputs_strips_and_defaults() -> None:
    assert read_inputs({"HP_HARNESS": " pi \n"})["harness"] == "pi"
    assert read_inputs({})["scenario"] == ""
