"""Prints, for each file of tests/golden/pe/directories/, what pefile
2024.8.26 makes of it, as the Rust table in crates/rustfx/src/pe/directory_tests.rs
expects it: the warning kinds (thrember's pefile_warnings.txt entries,
matched as thrember and rustfx's `warning_id` match them) and
has_dynamic_relocs, or the exception `PE()` raises.

    /tmp/thrember-venv/bin/python tests/pe/expected_directory_warnings.py [--raw]

--raw prints pefile's warnings verbatim instead.
"""

import sys
from pathlib import Path

import pefile

ROOT = Path(__file__).resolve().parents[2]
KINDS = (ROOT.parent / "shared/oracles/thrember/pefile_warnings.txt")


def kinds():
    path = KINDS if KINDS.exists() else Path("/work/shared/oracles/thrember/pefile_warnings.txt")
    return [k for k in path.read_text().splitlines() if k]


def warning_kind(warning, all_kinds):
    """rustfx's warning_id: the longest matching suffix kind, else the
    longest matching prefix kind."""
    suffixes = [k for k in all_kinds if k.startswith("...") and warning.endswith(k[3:])]
    if suffixes:
        return max(suffixes, key=len)
    prefixes = [k for k in all_kinds if not k.startswith("...") and k.endswith("...")
                and warning.startswith(k[:-3])]
    return max(prefixes, key=len) if prefixes else None


def main():
    raw = "--raw" in sys.argv
    all_kinds = kinds()
    for path in sorted((ROOT / "tests/golden/pe/directories").iterdir()):
        try:
            pe = pefile.PE(data=path.read_bytes())
        except Exception as e:  # noqa: BLE001 - any exception is the answer
            print(f'    ("{path.name}", Err("{type(e).__name__}")),')
            continue
        if raw:
            print(path.name, pe.has_dynamic_relocs())
            for w in pe.get_warnings():
                print("   ", w)
            continue
        found = sorted({warning_kind(w, all_kinds) for w in pe.get_warnings()} - {None})
        listed = ", ".join(f'"{k}"' for k in found)
        print(f'    ("{path.name}", Ok((&[{listed}], {str(pe.has_dynamic_relocs()).lower()}))),')


if __name__ == "__main__":
    main()
