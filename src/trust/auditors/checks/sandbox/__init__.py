"""The tier-1 code sandbox (paper 3.1.1, Tier 1: "execute code snippets in sandboxed environments").

Audited code runs in a child process, `python -m trust_sandbox_child`, under three layers
(`RunResult.layers` says which applied to a run):

- **Namespaces** (bubblewrap; `policy` lists every mount): its own user namespace (uid 65534, no
  capability, no nested user namespace), PID namespace (it sees and signals only its own processes;
  all die with the sandbox), network namespace (its own loopback and nothing else: the worker's
  loopback, the network and name lookups are out of reach), IPC and UTS namespaces, and a mount
  namespace whose root is read-only and holds only /usr, the interpreter's directories and the
  child's code; the run's fresh temporary directory is the one writable place. The environment is
  cleared. Nothing of the worker's home, keys, data or checkout is there.
- **An unprivileged user** (when the worker runs as root and the interpreter's directories are open
  to `nobody`): bubblewrap itself runs as `nobody`, so the child is no one on the host either, and
  RLIMIT_NPROC holds (Linux exempts processes of the host's root from it).
- **Resource limits** (`parent`, `child.limits`): CPU seconds, address space, file size,
  processes, open files, no core dumps; a wall-clock limit and capped stdout and stderr, watched
  from the parent.
- **An audit hook** (`child.hook`) inside the child: it names what the namespaces would only make
  fail (a socket, a subprocess, a write outside), so the verdict can say "needs what the sandbox
  refuses" rather than blame the code; why it stays is explained there.

Fail closed: without bubblewrap, or where the kernel refuses it namespaces, nothing runs; a run
raises `SandboxUnavailable` and the check answers "sandbox unavailable: ..." (not decided).
`SandboxSettings.allow_unconfined` (development only) runs the child with the limits and the hook
alone instead.

What it is not: proof against a kernel exploit. For code from a determined attacker, run the worker
in a VM or under gVisor as well. The check (`check`) states how code and tests are found and how
pytest's outcome becomes a verdict.

Modules: `parent` (starts and watches the child), `policy` (the bubblewrap command line), `check`
(`SandboxCheck`), `child/` (the code that runs inside; stdlib and pytest only).
"""

from trust.auditors.checks.sandbox.check import (
    CHECK_NAME,
    SOLUTION_FILE,
    Program,
    SandboxCheck,
    TestSource,
    find_program,
)
from trust.auditors.checks.sandbox.parent import (
    MAIN_FILE,
    Refusal,
    RunReason,
    RunResult,
    SandboxLayer,
    run_python,
    run_tests,
    sandbox_layers,
)

__all__ = [
    "CHECK_NAME",
    "MAIN_FILE",
    "SOLUTION_FILE",
    "Program",
    "Refusal",
    "RunReason",
    "RunResult",
    "SandboxCheck",
    "SandboxLayer",
    "TestSource",
    "find_program",
    "run_python",
    "run_tests",
    "sandbox_layers",
]
