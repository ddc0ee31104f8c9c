"""The sandbox's child: the program that runs inside the sandbox, around the audited code.

The parent (`trust.auditors.checks.sandbox.parent`) starts it as `python -m trust_sandbox_child`
inside the namespaces. Inside, this directory, and nothing else of `trust`, is mounted read-only as
the top-level package `trust_sandbox_child` (its location is passed in PYTHONPATH): importing it
under its full name would import `trust.auditors` and the checks with it (SymPy, NetworkX: half a
second per run) and would need the worker's code inside the sandbox. Hence the rules of this
package: the standard library and pytest only, and relative imports between its modules, so that
it runs under either name. Outside the sandbox the same modules are linted, type-checked and
tested as `trust.auditors.checks.sandbox.child`.

- `config`: what the parent tells the child (one JSON argument), and the report channel back.
- `limits`: the resource limits the child sets on itself before anything else runs.
- `hook`: the audit hook, the second layer inside the namespaces (why it stays: see there).
- `units`: what counts as a test unit (shared with the parent, which counts them ahead of a run).
- `runner`: the pytest plugin that runs a segment's tests by the project's convention.
"""

__all__: list[str] = []
