"""Writes crates/rustfx/src/pe/ordinals.rs from pefile's `ordlookup` tables (pefile
2024.8.26): the names pefile gives imports by ordinal from oleaut32,
ws2_32 and wsock32. Run with a Python that has pefile, from the repository
root, then `cargo fmt`:

    python python/tools/gen_ordinals.py > crates/rustfx/src/pe/ordinals.rs
"""

import ordlookup

HEADER = '''//! pefile's `ordlookup` tables: names for imports by ordinal from the DLLs
//! that are often linked without names (pefile 2024.8.26, generated from
//! its `ordlookup` package by python/tools/gen_ordinals.py; pefile gives
//! these imports the name, so thrember hashes the name, not `dll:ordinalN`).

/// The name pefile gives an import by `ordinal` from `dll_lower`: for the
/// three DLLs it knows, the table's name or else `ord<N>`; `None` otherwise.
pub fn ordinal_name(dll_lower: &[u8], ordinal: u16) -> Option<String> {
    let table: &[(u16, &[u8])] = match dll_lower {'''


def main():
    print(HEADER)
    consts = {dll: dll.decode().split(".")[0].upper() for dll in ordlookup.ords}
    for dll, const in consts.items():
        print(f'        b"{dll.decode()}" => {const},')
    print('''        _ => return None,
    };
    Some(match table.binary_search_by_key(&ordinal, |&(o, _)| o) {
        Ok(k) => String::from_utf8_lossy(table[k].1).into_owned(),
        Err(_) => format!("ord{ordinal}"),
    })
}''')
    for dll, names in ordlookup.ords.items():
        print()
        print(f"const {consts[dll]}: &[(u16, &[u8])] = &[")
        for o in sorted(names):
            name = names[o]
            assert all(32 < c < 127 and c not in b'"\\\\' for c in name), name
            print(f'    ({o}, b"{name.decode()}"),')
        print("];")


if __name__ == "__main__":
    main()
