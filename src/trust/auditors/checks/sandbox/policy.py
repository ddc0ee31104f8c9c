"""What the child may see and do: the bubblewrap command line, built from facts about this host.

The child gets new namespaces of every kind bubblewrap makes: user (it is uid and gid 65534 there,
mapped to the ids bubblewrap runs as, with no capability, and it may create no further user
namespace), PID (it sees only its own processes, and all of them die with the sandbox), network
(its own loopback interface and nothing else: no route to the worker's loopback or anywhere, no name
resolution), IPC, UTS (hostname "sandbox") and mount (bubblewrap 0.8 or newer: `--disable-userns`).
In the mount namespace the root is an empty tmpfs, made read-only once the mounts are in place; on
it, read-only, only what Python needs:

- /usr, and /bin, /lib, /lib64, /sbin as on the host (links into /usr on merged-/usr systems);
- /etc/ld.so.cache (the dynamic linker's cache), and nothing else of /etc;
- the interpreter's directories (sys.prefix and sys.base_prefix: the standard library, the
  site-packages with pytest, a virtual environment's pyvenv.cfg), each at its own path;
- this package's child code, as the top-level package `trust_sandbox_child`;
- a fresh /proc (of the new PID namespace) and a minimal /dev (null, zero, random, urandom, tty).

The run's own temporary directory is the one writable place: bound read-write at its own path, the
child's cwd, HOME and TMPDIR. Nothing else of the worker is there: not its home (keystores, the
worker's database, the IPFS repository), not the project's checkout, not /tmp. A directory to mount
that holds the worker's home is refused (`ConfigError`) rather than mounted.

The environment is cleared (`--clearenv`); the child gets HOME, TMPDIR, LANG and PYTHONPATH (the
child package's location; the child removes it before the audited code runs). `--die-with-parent`
ends the sandbox when the worker dies; `--new-session` keeps the child off the worker's terminal.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from trust.errors import ConfigError

__all__ = [
    "CHILD_LIBRARY",
    "CHILD_PACKAGE",
    "HostFacts",
    "Mount",
    "SANDBOX_ID",
    "bwrap_arguments",
    "host_facts",
    "python_arguments",
]

CHILD_PACKAGE = "trust_sandbox_child"
"""The child package's name inside the sandbox (see `trust.auditors.checks.sandbox.child`)."""
CHILD_LIBRARY = "/trust-sandbox/lib"
"""Where the child package is mounted inside the namespaces (the PYTHONPATH entry)."""
SANDBOX_ID = 65534
"""The child's uid and gid inside the user namespace: "nobody", an id that owns nothing there."""
SANDBOX_HOSTNAME = "sandbox"
SYSTEM_DIRECTORY = "/usr"
SYSTEM_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache",)
"""The dynamic linker's cache: without it, libraries outside the default search path go unfound."""


@dataclass(frozen=True, slots=True)
class Mount:
    """One read-only thing the child sees: `kind` "ro-bind" (a host path at `target`), "ro-bind-try"
    (the same, skipped when the host lacks it) or "symlink" (a link to `source` at `target`)."""

    kind: str
    source: str
    target: str

    def arguments(self) -> list[str]:
        return [f"--{self.kind}", self.source, self.target]


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What the child needs from this host: the interpreter as the worker names it (a virtual
    environment's bin/python must be run by that path: its pyvenv.cfg picks the site-packages), and
    the read-only mounts that let it run."""

    python: str
    mounts: tuple[Mount, ...]


def _link_chain(path: Path) -> list[Path]:
    """`path` and every path its symbolic links lead through, up to the file itself."""
    chain = [path]
    seen = {path}
    while chain[-1].is_symlink():
        target = Path(os.readlink(chain[-1]))
        step = target if target.is_absolute() else chain[-1].parent / target
        step = Path(os.path.normpath(step))
        if step in seen:
            break
        seen.add(step)
        chain.append(step)
    return chain


def _outermost(directories: Iterable[Path]) -> list[Path]:
    """The directories that lie in no other of them, in order."""
    unique = sorted(set(directories), key=lambda p: (len(p.parts), str(p)))
    kept: list[Path] = []
    for directory in unique:
        if not any(directory == k or directory.is_relative_to(k) for k in kept):
            kept.append(directory)
    return kept


def host_facts(python: str, prefixes: Iterable[str], home: Path) -> HostFacts:
    """The mounts for `python`, whose sys.prefix, sys.base_prefix and exec prefixes are `prefixes`.
    Raises `ConfigError` when one of the directories to mount holds `home` (the worker's keys and
    data live there: mounting it would hand them to the audited code)."""
    executable = Path(python)
    directories = [Path(SYSTEM_DIRECTORY), *(Path(p) for p in prefixes)]
    for link in _link_chain(executable):
        directories.append(link.parent)  # each hop of the interpreter's links must resolve inside
    outermost = _outermost(directories)
    home = Path(os.path.normpath(home))
    for directory in outermost:
        if home == directory or home.is_relative_to(directory):
            raise ConfigError(
                f"the sandbox would have to mount {directory} for the interpreter {python!r}, and that holds the "
                f"worker's home {home} (keys, data); install the sandbox's interpreter outside it and point "
                "sandbox.python at it"
            )
    mounts = []
    for name in SYSTEM_TOP_LEVEL:
        path = Path(name)
        if path.is_symlink():
            mounts.append(Mount("symlink", os.readlink(path), name))
        elif path.is_dir() and not any(path == d or path.is_relative_to(d) for d in outermost):
            mounts.append(Mount("ro-bind", name, name))
    mounts += [Mount("ro-bind", str(d), str(d)) for d in outermost]
    mounts += [Mount("ro-bind-try", name, name) for name in SYSTEM_FILES]
    return HostFacts(python, tuple(mounts))


def python_arguments(python: str, config_json: str) -> list[str]:
    """The child's command: -s (no user site-packages), -P (no script or cwd directory on sys.path),
    -B (no bytecode written); the child package is found through PYTHONPATH, which is set to
    `CHILD_LIBRARY` inside the namespaces (and to a directory holding it otherwise)."""
    return [python, "-s", "-P", "-B", "-m", CHILD_PACKAGE, config_json]


def bwrap_arguments(
    bwrap: str, facts: HostFacts, root: str, child_directory: str, environment: Mapping[str, str]
) -> list[str]:
    """The bubblewrap command line, up to and including the "--" before the child's command: the
    namespaces and mounts of the module docstring, `root` the one writable directory (and the cwd),
    `child_directory` mounted as `CHILD_LIBRARY/CHILD_PACKAGE`, `environment` the whole environment."""
    arguments = [
        bwrap,
        "--unshare-user",
        "--disable-userns",  # no nested user namespace: no capabilities anywhere, not even in one of its own
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--uid",
        str(SANDBOX_ID),
        "--gid",
        str(SANDBOX_ID),
        "--hostname",
        SANDBOX_HOSTNAME,
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]
    for name, value in environment.items():
        arguments += ["--setenv", name, value]
    for mount in facts.mounts:
        arguments += mount.arguments()
    arguments += ["--proc", "/proc", "--dev", "/dev"]
    arguments += ["--ro-bind", child_directory, f"{CHILD_LIBRARY}/{CHILD_PACKAGE}"]
    arguments += ["--bind", root, root, "--chdir", root]
    arguments += ["--remount-ro", "/", "--"]
    return arguments
