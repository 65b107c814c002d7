"""`python -m rustfx.extract`: corpus extraction on Ray (rustfx.corpus).

`rustfx.extract` is also the function `rustfx.extract(spec, contents)`
(rustfx.spec.extract). Importing this module (which `python -m` and
`import rustfx.extract` do) makes `rustfx.extract` the module; so that it
stays callable, the module's class is swapped for one whose __call__ is that
function.
"""

import sys
import types

from rustfx import spec as _spec


class _CallableModule(types.ModuleType):
    def __call__(self, spec, contents, *, name=None):
        return _spec.extract(spec, contents, name=name)


sys.modules[__name__].__class__ = _CallableModule
__doc__ = (__doc__ or "") + "\n\nrustfx.extract(spec, contents):\n" + (_spec.extract.__doc__ or "")

if __name__ == "__main__":
    from rustfx.corpus import main

    sys.exit(main())
