"""`python -m trust_sandbox_child CONFIG_JSON`: the child's entry point (the package docstring).

In order: the resource limits, then (tests only) pytest's import, then the audit hook, then the
"ready" record (the parent's proof that the sandbox itself started), then the audited code.
"""

from __future__ import annotations

import atexit
import builtins
import os
import sys

from .config import MODE_PROGRAM, MODE_TESTS, Channel, ChildConfig
from .hook import install_audit_hook
from .limits import apply_limits


def _run_program(config: ChildConfig, channel: Channel) -> None:
    """Runs the main file as `__main__`, with `__sandbox_report__(dict)` to send records. An
    uncaught exception is reported (its type and errno: MemoryError and EFBIG name a limit) and
    re-raised, so the exit status and the traceback on stderr are Python's own."""
    main = os.path.join(config.root, config.main)
    with open(main, "rb") as file:
        code = compile(file.read(), main, "exec")

    def report(record: dict[str, object]) -> None:
        channel.send({"program": record})

    namespace: dict[str, object] = {"__name__": "__main__", "__file__": main, "__builtins__": builtins}
    namespace["__sandbox_report__"] = report
    try:
        exec(code, namespace)
    except SystemExit:
        raise
    except BaseException as exc:
        number = getattr(exc, "errno", None)
        channel.send(
            {"sandbox": "uncaught", "type": type(exc).__name__, "errno": number if isinstance(number, int) else None}
        )
        raise


def main(argv: list[str]) -> None:
    config = ChildConfig.from_json(argv[1])
    apply_limits(config.rlimits)
    channel = Channel(config.report_fd)
    # Under bubblewrap, a death by signal N reaches the parent as exit status 128 + N; this record,
    # sent whenever the interpreter ends normally (even by an uncaught exception), tells them apart.
    atexit.register(channel.send, {"sandbox": "exited"})
    for name in ("PYTHONPATH", "PWD"):  # how this package was found, and bubblewrap's cwd: not the code's
        os.environ.pop(name, None)
    sys.dont_write_bytecode = True  # no __pycache__ in the run's directory
    sys.path.insert(0, config.root)  # the program may import its own files
    if config.mode == MODE_TESTS:
        # pytest is imported before the hook goes in: its imports are the sandbox's, not the code's.
        try:
            from . import runner
        except ImportError as exc:
            channel.send({"sandbox": "missing", "module": exc.name or str(exc)})
            raise SystemExit(2) from exc
    elif config.mode != MODE_PROGRAM:
        raise SystemExit(f"unknown sandbox mode {config.mode!r}")
    if config.audit_hook:
        install_audit_hook(config.root, channel.send, max_refusals=config.max_refusals, max_chars=config.max_chars)
    channel.send({"sandbox": "ready"})
    if config.mode == MODE_TESTS:
        runner.run_tests(config, lambda record: channel.send({"program": record}))
    else:
        _run_program(config, channel)


if __name__ == "__main__":
    main(sys.argv)
