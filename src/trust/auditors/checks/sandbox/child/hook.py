"""The audit hook: the second layer, inside the namespaces.

Why it stays, now that the kernel confines the child (no network, a read-only filesystem but for
the run's directory, its own PID and user namespace): the namespaces make a forbidden operation
fail with an ordinary OSError (ENETUNREACH, EROFS, ESRCH), which the audited code may catch, and
which reads, in a failing test, like a bug in the code. The hook refuses the same operations by
name first and tells the parent (a "refused" record, even when the code swallows the exception),
so the verdict can say "the code needs what the sandbox refuses: network" and leave the node
undecided instead of failing correct code that happens to want a socket. It also refuses what the
namespaces allow inside them and tier 1 has no use for: fork, exec and subprocesses (a fork bomb
then stops at the first fork, long before RLIMIT_NPROC), ctypes, new subinterpreters, and raising
the resource limits.

It is not the security boundary: it runs inside the audited process, and Python has known ways
around audit hooks (crafted bytecode, memory corruption). Everything it refuses, the namespaces and
the resource limits stop as well; `SandboxSettings.audit_hook = False` turns it off, and the tests
show each escape still failing without it. Where the namespaces are missing (the development mode
`allow_unconfined`), it is all that stands between the code and the host.

A refusal raises `SandboxRefused` (a PermissionError) or `SandboxImportRefused` (an ImportError).
"""

from __future__ import annotations

import _posixsubprocess
import os
import sys
from collections.abc import Callable

__all__ = ["REFUSAL_TEXT", "SandboxImportRefused", "SandboxRefused", "install_audit_hook"]

REFUSAL_TEXT = "the sandbox refuses this"
"""The start of every refusal's message (the parent recognises refusals by it)."""


class SandboxRefused(PermissionError):
    """An operation the sandbox does not allow."""


class SandboxImportRefused(ImportError):
    """A module the sandbox does not load."""


for _refusal in (SandboxRefused, SandboxImportRefused):
    _refusal.__module__ = "builtins"  # tracebacks name it plainly: "SandboxRefused: ..."

_NETWORK_EVENTS = frozenset(
    {
        "socket.connect",
        "socket.bind",
        "socket.sendto",
        "socket.sendmsg",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.getnameinfo",
        "socket.sethostname",
    }
)
_SOCKET_EVENTS = frozenset({"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"})
_PROCESS_EVENTS = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "os.startfile",
        "os.killpg",
        "subprocess.Popen",
        "pty.spawn",
    }
)
_INTERPRETER_EVENTS = frozenset(
    {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "cpython.PyInterpreterState_New"}
)
_LIMIT_EVENTS = frozenset({"resource.setrlimit", "resource.prlimit"})
_REFUSED_MODULES = frozenset(
    {
        "_ctypes",
        "_posixsubprocess",
        "_xxsubinterpreters",
        "_xxinterpchannels",
        "_testcapi",
        "_testinternalcapi",
        "_testmultiphase",
    }
)
_PATH_EVENTS: dict[str, tuple[tuple[int, int], ...]] = {
    # (index of a path argument, index of its dir_fd argument or -1), per event that changes files
    "os.remove": ((0, 1),),
    "os.rmdir": ((0, 1),),
    "os.mkdir": ((0, 2),),
    "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),),
    "os.utime": ((0, 3),),
    "os.truncate": ((0, -1),),
    "os.setxattr": ((0, -1),),
    "os.removexattr": ((0, -1),),
    "os.chflags": ((0, -1),),
    "os.lchflags": ((0, -1),),
    "os.rename": ((0, 2), (1, 3)),
    "os.link": ((0, 2), (1, 3)),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_WRITABLE_DEVICES = ("/dev/null",)
_AF_UNIX = 1
"""socket.AF_UNIX on Linux (a local socket pair is harmless; the hook compares raw family numbers so
that it need not import socket)."""


def install_audit_hook(
    root: str, send: Callable[[dict[str, object]], None], *, max_refusals: int, max_chars: int
) -> None:
    """Adds the hook (it cannot be removed) and replaces `_posixsubprocess.fork_exec`, which raises
    no audit event of its own. `root` is the one directory the code may write to; each refusal is
    reported with `send`, the first `max_refusals` of them."""
    getcwd, getpid, readlink, fspath = os.getcwd, os.getpid, os.readlink, os.fspath
    refusals_left = [max_refusals]

    def show(value: object) -> str:
        try:
            return repr(value)[:max_chars]
        except Exception:  # a hostile __repr__ must not decide what the hook reports
            return "?"

    def refuse(kind: str, event: str, detail: str, error: type[Exception] = SandboxRefused) -> None:
        detail = detail[:max_chars]
        if refusals_left[0] > 0:
            refusals_left[0] -= 1
            send({"sandbox": "refused", "kind": kind, "event": event, "detail": detail})
        raise error(f"{REFUSAL_TEXT} ({kind}: {event}{' ' + detail if detail else ''})")

    def refused_fork_exec(*args: object, **kwargs: object) -> None:
        refuse("process", "_posixsubprocess.fork_exec", "")

    setattr(_posixsubprocess, "fork_exec", refused_fork_exec)  # noqa: B010 (mypy: a module attribute)

    def as_text(path: object) -> str | None:
        try:
            text = fspath(path)  # type: ignore[call-overload]
        except TypeError:
            return None
        if isinstance(text, bytes):
            text = text.decode("utf-8", "surrogateescape")
        return text if isinstance(text, str) else None

    def resolve(path: object, dir_fd: object = -1) -> str | None:
        """The absolute, normalised path (by text only: no lookup the program could influence)."""
        if isinstance(path, int):
            try:
                return readlink(f"/proc/self/fd/{path}")
            except OSError:
                return None
        text = as_text(path)
        if text is None:
            return None
        if not text.startswith("/"):
            base = resolve(dir_fd) if isinstance(dir_fd, int) and dir_fd >= 0 else getcwd()
            if base is None:
                return None
            text = base + "/" + text
        parts: list[str] = []
        for part in text.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
                continue
            parts.append(part)
        return "/" + "/".join(parts)

    def inside(path: object, dir_fd: object = -1) -> bool:
        where = resolve(path, dir_fd)
        return where is not None and (where == root or where.startswith(root + "/") or where in _WRITABLE_DEVICES)

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(flags, int) and flags & _WRITE_FLAGS) or (
                isinstance(mode, str) and any(c in mode for c in "wax+")
            )
            if writing and not isinstance(path, int) and not inside(path):
                refuse("filesystem", event, f"write to {show(path)} outside the sandbox directory")
        elif event == "import":
            if args[0] in _REFUSED_MODULES:
                refuse("native", event, str(args[0]), SandboxImportRefused)
        elif event in _NETWORK_EVENTS:
            refuse("network", event, show(args[1] if event in _SOCKET_EVENTS else args))
        elif event == "socket.__new__":
            if args[1] != _AF_UNIX:
                refuse("network", event, f"socket family {show(args[1])}")
        elif event in _PROCESS_EVENTS:
            refuse("process", event, show(args[:2]))
        elif event == "os.kill":
            if args[0] != getpid():
                refuse("process", event, f"signal {show(args[1])} to process {show(args[0])}")
        elif event in _PATH_EVENTS:
            for path_index, fd_index in _PATH_EVENTS[event]:
                dir_fd = args[fd_index] if fd_index >= 0 else -1
                if not inside(args[path_index], dir_fd):
                    refuse("filesystem", event, f"{show(args[path_index])} lies outside the sandbox directory")
        elif event == "os.symlink":
            # A link inside may not point outside: later writes through it would look inside.
            source, target, dir_fd = args
            link = resolve(target, dir_fd)
            text = as_text(source)
            pointee = None
            if link is not None and text is not None:
                pointee = resolve(text if text.startswith("/") else link.rsplit("/", 1)[0] + "/" + text)
            if link is None or pointee is None or not inside(link) or not inside(pointee):
                refuse("filesystem", event, f"a link {show(target)} to {show(source)} leaving the sandbox directory")
        elif event.startswith("ctypes."):
            refuse("native", event, "")
        elif event in _INTERPRETER_EVENTS:
            refuse("interpreter", event, "")
        elif event in _LIMIT_EVENTS:
            refuse("limits", event, show(args))

    sys.addaudithook(hook)
