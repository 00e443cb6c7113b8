"""The errors a command can end with, as one tree: the CLI turns each into exit code 2 and one named line.

```
HarnessProbeError                 anything harness-probe itself refuses or cannot do (exit 2)
├── InputError                    what the user gave cannot be used; nothing was started
│   ├── UnknownHarness            no harness of that name (built-in or plugin), or a plugin that does not load
│   ├── BadOption                 an option (a harness's -a KEY=VALUE, or a command's) unknown or not allowed
│   ├── BadFile                   an input file or folder that is missing or malformed
│   ├── OutputExists              the output directory exists (results are never mixed)
│   ├── OutputUnwritable          the output directory cannot be made (no permission, under a file, /proc, ...)
│   ├── InputChanged              an input changed while it was read (audit)
│   └── UnknownRuntime            a runtime name that is not in the registry
└── ExecutionError                the inputs were fine; the machine could not do the work
    ├── BuildError                an image did not build
    ├── EngineUnavailable         the container runtime does not answer (a named one never falls back)
    └── CleanupIncomplete         some of a run's objects are still there after the clean-up
```

A harness's own misbehaviour is never one of these: it is a `fail` with a named finding in the results.
Classes that older callers caught as a builtin (KeyError, ValueError, FileExistsError, RuntimeError) still are.
"""

from __future__ import annotations

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "BadFile",
    "BadOption",
    "BuildError",
    "CleanupIncomplete",
    "EngineUnavailable",
    "ExecutionError",
    "HarnessProbeError",
    "InputChanged",
    "InputError",
    "OutputExists",
    "OutputUnwritable",
    "UnknownHarness",
    "UnknownRuntime",
    "one_line",
]

# Input and execution errors share exit code 2; 1 is reserved for a failed check.
EXIT_ERROR = 2
# A run stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it), with or without a partial summary.
EXIT_INTERRUPTED = 130


class HarnessProbeError(Exception):
    """Base of every error the CLI reports as `harness-probe: <Name>: <message>` with exit code 2."""

    def __str__(self) -> str:
        # KeyError's str() is the repr of its argument; every error here prints its message as written.
        return str(self.args[0]) if self.args else self.__class__.__doc__ or ""


class InputError(HarnessProbeError):
    """What the user gave cannot be used; nothing was started."""


class ExecutionError(HarnessProbeError):
    """The inputs were fine, but the machine could not do the work."""


class UnknownHarness(InputError, KeyError):
    """No harness of that name, or a plugin that cannot be loaded; the message lists the known ones."""


class BadOption(InputError, ValueError):
    """An option (a harness's -a KEY=VALUE, or a command's) unknown or outside what it allows; the message lists
    what is allowed."""


class BadFile(InputError, ValueError):
    """An input file or folder that is missing or malformed."""


class OutputExists(InputError, FileExistsError):
    """Results are never overwritten or mixed: an existing output directory is refused."""


class OutputUnwritable(InputError, OSError):
    """The output directory, or an output file an option names, cannot be made or written where it was asked for."""


class InputChanged(InputError, RuntimeError):
    """A source file changed while it was read: verdicts would rest on nothing fixed."""


class UnknownRuntime(InputError, ValueError):
    """A runtime name that is not in the registry; the message lists the known ones."""


class BuildError(ExecutionError, RuntimeError):
    """An image could not be built; the message carries the tail of the build log."""


class EngineUnavailable(ExecutionError, RuntimeError):
    """No container engine answered at the configured (or named) address."""


class CleanupIncomplete(ExecutionError, RuntimeError):
    """Some of a run's objects are still there after the clean-up (named in the message)."""


def one_line(exc: BaseException) -> str:
    """`Name: message` with the message's first line, as the CLI prints an error."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
