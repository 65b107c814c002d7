"""`python -m rustfx.extract`: the old name of `python -m rustfx.corpus`.

Deprecated: it says so on stderr and runs the corpus CLI. This file exists
only because `python -m` needs a module of that name; `rustfx.extract` is
the function rustfx.spec.extract, and the two coexist because the module
is never bound as `rustfx.extract`: `python -m rustfx.extract` imports the
package rustfx (which binds the function) and then runs this file as
`__main__`, without importing it as the submodule. Imported by name
(`import rustfx.extract`), the import system would rebind the attribute
`rustfx.extract` to this module once it had run, so that import fails
here instead, before it can: the function stays.
"""

import sys

if __name__ != "__main__":
    raise ImportError("rustfx.extract is the function rustfx.extract(spec, contents) "
                      "(`import rustfx`); the module only runs `python -m rustfx.extract`, "
                      "the old name of `python -m rustfx.corpus`")

from rustfx.corpus.__main__ import main  # noqa: E402

print("python -m rustfx.extract is deprecated: use python -m rustfx.corpus (same options)",
      file=sys.stderr)
sys.exit(main(prog="python -m rustfx.extract"))
