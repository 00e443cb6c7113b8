"""The proxy's entry point: mitmdump's chain in mitmproxy's order, without importing the addon modules left out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mitmproxy import addons

from proxy_addons.serve import DEFAULT_ADDONS, LEFT_OUT

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


def test_a_filter_expression_is_refused_at_start(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "proxy_addons.serve", "--mode", "reverse:http://upstream.invalid/@0", "~q"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "HOME": str(tmp_path)},
        check=False,
    )
    assert res.returncode == 1
    assert "filter expressions are not supported: ~q" in res.stderr
