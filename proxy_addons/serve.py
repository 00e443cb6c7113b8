"""The proxy container's entry point: mitmdump with the scripted provider, importing only the addons it can use.

Why: `mitmproxy.addons/__init__.py` imports every addon module to build its default list, and three of them pull in
large libraries for nothing here (onboarding: flask; proxyauth: ldap3; maplocal: werkzeug). Here the package is
entered without running its `__init__` and the chain is built from the modules it needs: the proxy's CPU before it
listens went from about 1.06 to 0.73 s per episode (with the start-up GC below), its start-up from 1.36 to 1.02 s.

What stays as mitmdump does it (mitmproxy 12.3.1, pinned): the command line (`mitmproxy.tools.cmdline.mitmdump`, for
every option that exists here), logging, option processing, signal handling and exit codes (`mitmproxy.tools.main.run`),
and the chain of `DumpMaster`: termlog, `default_addons()` in its order, dumper, keepserving, stdin reader, errorcheck.
The provider sits right after the script loader, where `-s provider.py` put it, and still prunes the `INERT_ADDONS`
once running. Left out: `onboarding` (its app answers only requests whose Host is `mitm.it`, and reverse mode rewrites
every Host to the upstream's, `keep_host_header` being off) and `proxyauth` and `maplocal` (in `INERT_ADDONS`: with
their options at the defaults they do nothing, and their options do not exist here, so none can be set by mistake).
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any

ADDONS_PACKAGE = "mitmproxy.addons"
# `mitmproxy.addons.default_addons()` of the pinned mitmproxy, in its order: (module, class).
DEFAULT_ADDONS: tuple[tuple[str, str], ...] = (
    ("core", "Core"),
    ("browser", "Browser"),
    ("block", "Block"),
    ("strip_dns_https_records", "StripDnsHttpsRecords"),
    ("blocklist", "BlockList"),
    ("anticache", "AntiCache"),
    ("anticomp", "AntiComp"),
    ("clientplayback", "ClientPlayback"),
    ("command_history", "CommandHistory"),
    ("comment", "Comment"),
    ("cut", "Cut"),
    ("disable_h2c", "DisableH2C"),
    ("export", "Export"),
    ("onboarding", "Onboarding"),
    ("proxyauth", "ProxyAuth"),
    ("proxyserver", "Proxyserver"),
    ("script", "ScriptLoader"),
    ("dns_resolver", "DnsResolver"),
    ("next_layer", "NextLayer"),
    ("serverplayback", "ServerPlayback"),
    ("mapremote", "MapRemote"),
    ("maplocal", "MapLocal"),
    ("modifybody", "ModifyBody"),
    ("modifyheaders", "ModifyHeaders"),
    ("stickyauth", "StickyAuth"),
    ("stickycookie", "StickyCookie"),
    ("save", "Save"),
    ("savehar", "SaveHar"),
    ("tlsconfig", "TlsConfig"),
    ("upstream_auth", "UpstreamAuth"),
    ("update_alt_svc", "UpdateAltSvc"),
)
# Modules never imported (see the module docstring for why each does nothing in this proxy).
LEFT_OUT = frozenset({"onboarding", "proxyauth", "maplocal"})
# The provider goes right after this addon: the script loader's scripts are its sub-addons, next in the chain.
PROVIDER_AFTER = "script"


def enter_addons_package() -> ModuleType:
    """Make `mitmproxy.addons` importable as a package without running its `__init__` (which imports every addon).

    Its one other name, `default_addons`, still works: the first use of it runs the real `__init__` then. Does
    nothing when the package is already imported.
    """
    if ADDONS_PACKAGE in sys.modules:
        return sys.modules[ADDONS_PACKAGE]
    spec = importlib.util.find_spec(ADDONS_PACKAGE)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{ADDONS_PACKAGE} is not an importable package")
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(name: str) -> Any:
        # Only for a name the real `__init__` defines: an import of a submodule asks for its name first and must
        # get AttributeError, so that the submodule alone is imported.
        if name != "default_addons":
            raise AttributeError(f"module {ADDONS_PACKAGE!r} has no attribute {name!r}")
        del package.__getattr__
        loader.exec_module(package)
        return package.default_addons

    package.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[ADDONS_PACKAGE] = package
    import mitmproxy  # the parent package alone imports no addon

    mitmproxy.addons = package
    return package


def build_chain(provider: object) -> list[Any]:
    """Instances of `DEFAULT_ADDONS` but `LEFT_OUT`, in order, with `provider` right after the script loader."""
    chain: list[Any] = []
    for module_name, class_name in DEFAULT_ADDONS:
        if module_name in LEFT_OUT:
            continue
        module = importlib.import_module(f"{ADDONS_PACKAGE}.{module_name}")
        chain.append(getattr(module, class_name)())
        if module_name == PROVIDER_AFTER:
            chain.append(provider)
    return chain


def make_master_class() -> type[Any]:
    """mitmdump's `DumpMaster`, with `build_chain` in place of `default_addons()`."""
    # Imported here, once enter_addons_package has run.
    from mitmproxy import master
    from mitmproxy.addons import dumper, errorcheck, keepserving, readfile

    from proxy_addons.provider import ScriptedProvider

    class ProviderMaster(master.Master):
        def __init__(self, options: Any) -> None:
            super().__init__(options, with_termlog=True)
            manager: Any = self.addons  # untyped in mitmproxy
            manager.add(*build_chain(ScriptedProvider()))
            manager.add(dumper.Dumper())
            stdin_reader: Any = readfile.ReadFileStdin
            manager.add(keepserving.KeepServing(), stdin_reader(), errorcheck.ErrorCheck())

        async def running(self) -> None:
            await super().running()
            # What start-up made lives as long as the process: frozen, no later collection walks it again.
            gc.freeze()
            gc.enable()

    return ProviderMaster


def filter_options(args: Any) -> dict[str, Any]:
    """As mitmdump: trailing filter expressions set the filters of saving, reading and printing flows."""
    if args.filter_args:
        expression = " ".join(args.filter_args)
        return {"save_stream_filter": expression, "readfile_filter": expression, "dumper_filter": expression}
    return {}


def main(argv: list[str] | None = None) -> None:
    # No cyclic collection until the proxy runs: importing mitmproxy and building the chain make some 100,000
    # objects that all live on, and collections walking them were about 0.04 s of start-up CPU.
    gc.disable()
    enter_addons_package()
    from mitmproxy.tools import cmdline
    from mitmproxy.tools.main import run

    run(make_master_class(), cmdline.mitmdump, sys.argv[1:] if argv is None else argv, filter_options)


if __name__ == "__main__":
    main()
