"""`run --harness-version / --harness-source`: the options, resolved into variant images before any container starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from orchestrator.errors import BadFile, BadOption
from orchestrator.evidence.text import clean
from orchestrator.harnesses import Harness
from orchestrator.images import ImageVariant, default_extra_ca
from orchestrator.variants import RegistryError, SourceError, VariantError, source_variant, version_variant

__all__ = ["HarnessSource", "HarnessVersion", "print_overrides", "resolve_variants"]

Variants = dict[str, tuple[ImageVariant, dict[str, Any]]]

HarnessVersion = Annotated[
    list[str] | None,
    typer.Option(
        "--harness-version",
        metavar="[HARNESS=]VERSION",
        help=(
            "Probe this registry release instead of the harness's pin (npm or PyPI, as its image installs it): the "
            "lock is resolved now and the image is tagged by its inputs. HARNESS= is needed with several -H."
        ),
        rich_help_panel="Harness under test",
    ),
]
HarnessSource = Annotated[
    list[str] | None,
    typer.Option(
        "--harness-source",
        metavar="[HARNESS=]PATH",
        help=(
            "Install the harness from a local build instead of its pin: an npm tarball or package folder, a wheel or "
            "Python project folder, or (reference) a copy of its image folder. Reports record its sha256."
        ),
        rich_help_panel="Harness under test",
    ),
]


def _split(values: list[str], names: list[str], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in values:
        name, sep, value = raw.partition("=")
        if not (sep and name in names):
            if len(names) != 1:
                raise BadOption(f"{flag} {raw!r}: name the harness (HARNESS=VALUE) when several -H are given")
            name, value = names[0], raw
        if not value:
            raise BadOption(f"{flag} {raw!r}: empty value")
        if name in out:
            raise BadOption(f"{flag} given twice for harness {name!r}")
        out[name] = value
    return out


def resolve_variants(
    harnesses: list[Harness], versions: list[str] | None, sources: list[str] | None, extra_ca: Path | None
) -> Variants:
    """Harness name -> its variant; BadOption (a release, a pairing) or BadFile (a source) names what is wrong,
    before anything is built."""
    names = [h.name for h in harnesses]
    by_version = _split(versions or [], names, "--harness-version")
    by_source = _split(sources or [], names, "--harness-source")
    both = sorted(set(by_version) & set(by_source))
    if both:
        raise BadOption(f"harness {both[0]!r}: give --harness-version or --harness-source, not both")
    if len(set(names)) != len(names) and (by_version or by_source):
        raise BadOption("a harness given twice with -H cannot have its pin overridden (which one would it be?)")
    ca = extra_ca or default_extra_ca()
    out: Variants = {}
    try:
        for h in harnesses:
            if h.name in by_version:
                made = version_variant(h.image, h.name, by_version[h.name], ca)
                if made is not None:
                    out[h.name] = made
            elif h.name in by_source:
                out[h.name] = source_variant(h.image, h.name, Path(by_source[h.name]))
    except SourceError as exc:
        raise BadFile(str(exc)) from None
    except (VariantError, RegistryError) as exc:
        raise BadOption(str(exc)) from None
    return out


def print_overrides(output: Path, variants: Variants) -> None:
    """One line per overridden pin, with the version string the image itself answered (from runtime.json)."""
    # The report package is imported beside the first pod's start (suite.import_ahead), not before `run` begins.
    from orchestrator.report.overrides import override_text

    for name, (_, record) in variants.items():
        ran = None
        for path in sorted(output.glob(f"{name}/*/runtime.json"))[:1]:
            try:
                answered = json.loads(path.read_text())["harness"]["version"]
                ran = answered if isinstance(answered, str) else None
            except (OSError, ValueError, KeyError, TypeError):
                ran = None
        # The version is what the image answered: a build under test can answer anything.
        typer.echo(clean(override_text(name, record, ran)))
