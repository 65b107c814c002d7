#!/usr/bin/env python3
"""Prints the expectations of crates/rustfx/src/pe/resources/tests.rs, from pefile.

    .venv/bin/python tests/pe/expected_resource_warnings.py   # needs pefile 2024.8.26

For every file under tests/golden/pe/resources/ (tests/pe/build_resource_cases.py),
the set of thrember warning kinds among pefile's warnings, as a Rust table
(`EXPECTED` in crates/rustfx/src/pe/resources/tests.rs). A warning's kind is found as rustfx's
`warning_id` finds it: the longest matching `...suffix` kind, else the longest
matching `prefix...` kind; the kinds are read from PEFILE_WARNINGS in
crates/rustfx/src/ember2024/pe_groups/warnings.rs (thrember's pefile_warnings.txt, in order).
Warnings of no kind (pefile's wording differs from thrember's list for a few)
are listed in a comment.
"""

import re
from pathlib import Path

import pefile

ROOT = Path(__file__).resolve().parent.parent.parent
CASES = ROOT / "tests" / "golden" / "pe" / "resources"
GROUPS = ROOT / "crates" / "rustfx" / "src" / "ember2024" / "pe_groups" / "warnings.rs"


def kinds():
    source = GROUPS.read_text()
    table = source[source.index("pub const PEFILE_WARNINGS"):]
    table = table[:table.index("];")]
    return [bytes(k, "utf-8").decode("unicode_escape") for k in re.findall(r'^\s*"(.*)",$', table, re.M)]


def kind_of(warning, all_kinds):
    for suffix in (True, False):
        matches = [k for k in all_kinds
                   if (k.startswith("...") and warning.endswith(k[3:])) == suffix and
                   (suffix or (not k.startswith("...") and warning.startswith(k[:-3])))]
        if matches:
            return max(matches, key=len)
    return None


def main():
    all_kinds = kinds()
    assert len(all_kinds) == 87, len(all_kinds)
    print("const EXPECTED: &[(&str, &[&str])] = &[")
    for path in sorted(CASES.iterdir()):
        warnings = pefile.PE(data=path.read_bytes()).get_warnings()
        found = sorted({kind_of(w, all_kinds) for w in warnings} - {None})
        unmatched = sorted({w for w in warnings if kind_of(w, all_kinds) is None})
        for w in unmatched:
            print(f"    // (no kind) {w}")
        items = ", ".join('"' + k.replace("\\", "\\\\").replace('"', '\\"') + '"' for k in found)
        print(f'    ("{path.name}", &[{items}]),')
    print("];")


if __name__ == "__main__":
    main()
