"""The proxy's entry point: mitmdump's chain in mitmproxy's order, without importing the addon modules left out."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from mitmproxy import addons

from proxy_addons.serve import DEFAULT_ADDONS, LEFT_OUT, filter_options

REPO = Path(__file__).resolve().parents[3]
# Libraries that only the left-out addons import (onboarding: flask and werkzeug; proxyauth: ldap3).
HEAVY = ("flask", "werkzeug", "ldap3")


def run_python(code: str) -> str:
    """`code` in a fresh interpreter (this one has imported all of mitmproxy.addons already); its stdout."""
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO, check=False
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_default_addons_are_those_of_the_pinned_mitmproxy_in_its_order() -> None:
    mitmproxy_list = [(type(a).__module__.rpartition(".")[2], type(a).__name__) for a in addons.default_addons()]
    assert list(DEFAULT_ADDONS) == mitmproxy_list


def test_master_has_dumpmasters_chain_with_the_provider_after_the_script_loader_and_imports_nothing_left_out() -> None:
    out = run_python(
        """
import asyncio, json, sys
from proxy_addons import serve
serve.enter_addons_package()
from mitmproxy import options

async def chain():
    master = serve.make_master_class()(options.Options())
    return [type(a).__name__ for a in master.addons.chain]

names = asyncio.run(chain())
print(json.dumps({"chain": names, "modules": sorted(m for m in sys.modules if m.startswith("mitmproxy.addons."))}))
for name in {heavy!r}:
    print(json.dumps([name, any(m == name or m.startswith(name + ".") for m in sys.modules)]))
""".replace("{heavy!r}", repr(HEAVY))
    )
    first, *heavy = out.splitlines()
    found = json.loads(first)
    expected = ["TermLog"]
    for module, cls in DEFAULT_ADDONS:
        if module not in LEFT_OUT:
            expected.append(cls)
        if cls == "ScriptLoader":
            expected.append("ScriptedProvider")
    expected += ["Dumper", "KeepServing", "ReadFileStdin", "ErrorCheck"]
    assert found["chain"] == expected
    assert not {f"mitmproxy.addons.{m}" for m in LEFT_OUT} & set(found["modules"])
    assert [json.loads(line) for line in heavy] == [[name, False] for name in HEAVY]


def test_the_packages_default_addons_still_work_on_first_use() -> None:
    out = run_python(
        """
import sys
from proxy_addons import serve
serve.enter_addons_package()
import mitmproxy.addons.core
assert "flask" not in sys.modules
import mitmproxy.addons
print(len(mitmproxy.addons.default_addons()), "flask" in sys.modules)
"""
    )
    assert out.split() == [str(len(DEFAULT_ADDONS)), "True"]


def test_trailing_filter_expressions_set_the_options_mitmdump_sets() -> None:
    assert filter_options(argparse.Namespace(filter_args=[])) == {}
    assert filter_options(argparse.Namespace(filter_args=["~q", "~h", "x"])) == {
        "save_stream_filter": "~q ~h x",
        "readfile_filter": "~q ~h x",
        "dumper_filter": "~q ~h x",
    }


def test_cyclic_gc_is_off_during_start_up_and_on_once_running_with_start_ups_objects_frozen(tmp_path: Path) -> None:
    out = run_python(
        """
import asyncio, gc
from proxy_addons import serve
gc.disable()
serve.enter_addons_package()
from mitmproxy import options

async def start():
    opts = options.Options(confdir=CONFDIR)
    master = serve.make_master_class()(opts)
    # The options a filter expression sets exist in this chain (update raises KeyError for an unknown one).
    opts.update(**serve.filter_options(type("Args", (), {"filter_args": ["~q"]})()))
    before = gc.isenabled()
    await master.running()
    print(before, gc.isenabled(), gc.get_freeze_count() > 10000)
    await master.done()

asyncio.run(start())
""".replace("CONFDIR", repr(str(tmp_path / "confdir")))
    )
    assert out.split() == ["False", "True", "True"]
