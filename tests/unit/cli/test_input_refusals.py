"""Inputs refused or made whole before any engine is asked: repeats, empty ids, long timeouts, bad shards, paths."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.cli import cleanup as cleanup_cli
from orchestrator.cli import run as run_cli
from orchestrator.evidence import FormatError
from orchestrator.harnesses import get_harness
from orchestrator.parallel import MAX_SHARDS, parse_shard
from orchestrator.scenarios import SCENARIOS_DIR, load_scenario
from orchestrator.stop import SuiteResult

RUN = ["run", "-H", "reference", "-s", "tool_success"]


def _invoke(argv: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(app, argv)
    assert not isinstance(res.exception, Exception) or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


def _flat(output: str) -> str:
    """A usage error as one line: rich boxes and wraps it to the terminal's width."""
    return " ".join(output.replace("│", " ").split())


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """`run` with its engine and suite faked: what run_suite was given is recorded, and it writes the summary of a
    run of no episode (as an empty --shard slice's is)."""
    given: list[Any] = []

    def suite(cfg: Any, *_: Any, **__: Any) -> SuiteResult:
        given.append(cfg)
        cfg.output.mkdir(parents=True)
        (cfg.output / "summary.json").write_text('{"errors": ["no episode was run"], "exit_code": 2}')
        return SuiteResult("r", cfg.output, [], 2)

    monkeypatch.setattr(run_cli, "connect", lambda *_: object())
    monkeypatch.setattr(run_cli, "run_suite", suite)
    return given


def _never(*_: Any) -> Any:
    raise AssertionError("the engine was asked")


# (1) the same harness or scenario twice


def test_repeated_harnesses_are_dropped_keeping_the_first_order() -> None:
    ref, pi = get_harness("reference"), get_harness("pi")
    kept = run_cli.unique_harnesses([ref, pi, get_harness("reference"), pi])
    assert [h.name for h in kept] == ["reference", "pi"]
    assert kept[0] is ref


def test_repeated_scenarios_are_dropped_by_name_or_path(tmp_path: Path) -> None:
    copy = tmp_path / "tool_success.yaml"
    shutil.copy(SCENARIOS_DIR / "tool_success.yaml", copy)
    given = [
        load_scenario("tool_failure"),
        load_scenario("tool_success"),
        load_scenario(str(SCENARIOS_DIR / "tool_success.yaml")),
        load_scenario(str(copy)),  # another path to the same content
        load_scenario("tool_failure"),
    ]
    kept = run_cli.unique_scenarios(given)
    assert [s.name for s in kept] == ["tool_failure", "tool_success"]
    assert kept[1] is given[1]


def test_two_different_files_of_one_scenario_name_are_refused(tmp_path: Path) -> None:
    other = tmp_path / "tool_success.yaml"
    other.write_text((SCENARIOS_DIR / "tool_success.yaml").read_text() + "\n# changed\n")
    with pytest.raises(typer.BadParameter, match="two different scenarios named 'tool_success'"):
        run_cli.unique_scenarios([load_scenario("tool_success"), load_scenario(str(other))])


def test_run_plays_each_harness_and_scenario_once(no_engine: list[Any], tmp_path: Path) -> None:
    argv = ["run", "-H", "reference", "-H", "reference", "-s", "tool_success", "-s", "tool_failure"]
    _, output = _invoke([*argv, "-s", str(SCENARIOS_DIR / "tool_success.yaml"), "-o", str(tmp_path / "out")])
    (cfg,) = no_engine
    assert [h.name for h in cfg.harnesses] == ["reference"]
    assert [s.name for s in cfg.scenarios] == ["tool_success", "tool_failure"]
    assert output.count("repeated harnesses or scenarios dropped") == 1


# (2) cleanup --run-id ''


@pytest.mark.parametrize("run_id", ["", "   "])
def test_an_empty_run_id_is_refused_before_anything_is_removed(monkeypatch: pytest.MonkeyPatch, run_id: str) -> None:
    monkeypatch.setattr(cleanup_cli, "cleanup_everywhere", _never)
    monkeypatch.setattr(cleanup_cli, "sweep_tempdirs", _never)
    code, output = _invoke(["cleanup", "--run-id", run_id, "--force"])
    assert code == 2, output
    assert "Invalid value for '--run-id': an empty run id would match every run" in _flat(output)


def test_a_run_id_is_passed_on(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str | None] = []

    def everywhere(_runtimes: Any, run_id: str | None, *_: Any) -> dict[str, Any]:
        asked.append(run_id)
        return {}

    monkeypatch.setattr(cleanup_cli, "cleanup_everywhere", everywhere)
    monkeypatch.setattr(cleanup_cli, "sweep_tempdirs", lambda: [])
    code, output = _invoke(["cleanup", "--run-id", "20261204T031500-1a2b3c"])
    assert code == 0, output
    assert asked == ["20261204T031500-1a2b3c"]


# (3) timeouts past the runtimes' clocks


@pytest.mark.parametrize(
    ("argv", "option", "said"),
    [
        ([*RUN, "--timeout", "1e10"], "--timeout", "is not in the range 1<=x<=604800"),
        ([*RUN, "--timeout", "inf"], "--timeout", "is not in the range 1<=x<=604800"),
        ([*RUN, "--timeout", "nan"], "--timeout", "nan is not a number of seconds"),
        ([*RUN, "--collect-timeout", "604801"], "--collect-timeout", "is not in the range 1<=x<=604800"),
        ([*RUN, "--collect-timeout", "nan"], "--collect-timeout", "nan is not a number of seconds"),
        (["drift", "-H", "reference", "--timeout", "1e10"], "--timeout", "is not in the range 1<=x<=604800"),
        (["drift", "-H", "reference", "--timeout", "nan"], "--timeout", "nan is not a number of seconds"),
    ],
)
def test_a_timeout_past_seven_days_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str], option: str, said: str
) -> None:
    monkeypatch.setattr(run_cli, "connect", _never)
    code, output = _invoke([*argv, "-o", str(tmp_path / "out")])
    assert code == 2, output
    assert f"Invalid value for '{option}'" in _flat(output) and said in _flat(output)
    assert not (tmp_path / "out").exists()


def test_seven_days_is_accepted(no_engine: list[Any], tmp_path: Path) -> None:
    _invoke([*RUN, "--timeout", "604800", "--collect-timeout", "604800", "-o", str(tmp_path / "out")])
    assert no_engine[0].timeout == 604800


# (4) an exit 2 of run says why


def test_a_run_that_ran_no_episode_says_why(no_engine: list[Any], tmp_path: Path) -> None:
    code, output = _invoke([*RUN, "--shard", "2/2", "-o", str(tmp_path / "out")])
    assert code == 2
    assert no_engine[0].shard == (2, 2)
    assert "harness-probe: exit 2 (1 error(s), all in" in output
    assert "  no episode was run" in output


# (5) --shard


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("²/3", "is not I/N: two whole numbers in digits 0-9 (e.g. 1/4)"),
        ("1/３", "is not I/N"),
        ("", "is not I/N"),
        ("1/99999999999999999999", f"N is at most {MAX_SHARDS}"),
        (f"1/{MAX_SHARDS + 1}", f"N is at most {MAX_SHARDS}"),
        pytest.param("9" * 5000 + "/3", "need 1 <= I <= N", id="an I of 5000 digits"),
    ],
)
def test_a_bad_shard_is_named(text: str, said: str) -> None:
    with pytest.raises(ValueError, match="--shard") as err:
        parse_shard(text)
    assert said in str(err.value)


def test_shards_up_to_the_maximum_and_leading_zeros_are_taken() -> None:
    assert parse_shard(f"{MAX_SHARDS}/{MAX_SHARDS}") == (MAX_SHARDS, MAX_SHARDS)
    assert parse_shard("0" * 5000 + "1/02") == (1, 2)


@pytest.mark.parametrize("text", ["²/3", "1/99999999999999999999", ""])
def test_run_names_a_bad_shard_before_the_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str) -> None:
    monkeypatch.setattr(run_cli, "connect", _never)
    code, output = _invoke([*RUN, "--shard", text, "-o", str(tmp_path / "out")])
    assert code == 2
    assert output.startswith(f"harness-probe: --shard {text!r}"), output
    assert "invalid literal" not in output


# (6) scenario paths that are not a readable file


def _fault(ref: str | Path) -> str:
    with pytest.raises(FormatError) as err:
        load_scenario(ref)
    (fault,) = err.value.faults
    return fault.message


def test_a_missing_scenario_file_is_named(tmp_path: Path) -> None:
    assert _fault(str(tmp_path / "absent.yaml")) == f"scenario file {tmp_path / 'absent.yaml'} does not exist"
    assert _fault(str(tmp_path / "absent")) == f"scenario file {tmp_path / 'absent'} does not exist"


def test_a_folder_is_not_a_scenario_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _fault(str(tmp_path)) == f"{tmp_path} is a folder, not a scenario file"
    (tmp_path / "somedir").mkdir()
    monkeypatch.chdir(tmp_path)
    assert _fault("somedir") == "somedir is a folder, not a scenario file"
    assert _fault("no_such_name").startswith("no such scenario (known: ")  # a bare name, not on disk


def test_a_device_is_not_read() -> None:
    assert _fault("/dev/null") == "/dev/null is not a regular file (a FIFO, device or socket), not a scenario file"


def test_an_unreadable_scenario_file_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = tmp_path / "tool_success.yaml"
    shutil.copy(SCENARIOS_DIR / "tool_success.yaml", locked)
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads a mode-000 file: the refusal a user meets is made by hand

        def refused(self: Path) -> bytes:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))

        monkeypatch.setattr(Path, "read_bytes", refused)
    assert _fault(str(locked)) == f"cannot read scenario file {locked}: Permission denied"


def test_run_names_a_missing_scenario_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(run_cli, "connect", _never)
    code, output = _invoke(["run", "-H", "reference", "-s", "/nonexistent.yaml", "-o", str(tmp_path / "out")])
    assert code == 2
    assert "harness-probe: FormatError: /nonexistent.yaml is not valid:" in output
    assert "scenario file /nonexistent.yaml does not exist" in output
    assert "no such scenario" not in output


# (drift) --against


def _no_registry(*_: Any) -> Any:
    raise AssertionError("the registry was asked")


def test_drift_names_a_bad_release_version_whole_in_quotes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from orchestrator.cli import drift as drift_cli

    monkeypatch.setattr(drift_cli, "newest_version", _no_registry)
    monkeypatch.setattr(drift_cli, "connect", _never)
    code, output = _invoke(["drift", "-H", "pi", "--against", "../../../tmp/zz", "-o", str(tmp_path / "out")])
    assert code == 2, output
    assert "harness-probe: '../../../tmp/zz' is not a release version" in output
    assert not (tmp_path / "out").exists()


def test_drift_refuses_an_empty_against_before_asking_the_registry(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from orchestrator.cli import drift as drift_cli

    monkeypatch.setattr(drift_cli, "newest_version", _no_registry)
    monkeypatch.setattr(drift_cli, "resolve_variants", _no_registry)
    monkeypatch.setattr(drift_cli, "connect", _never)
    code, output = _invoke(["drift", "-H", "pi", "--against", "", "-o", str(tmp_path / "out")])
    assert code == 2, output
    assert "Invalid value for '--against': is empty" in _flat(output)
    assert not (tmp_path / "out").exists()
