//! Each file of tests/golden/pe/resources (tests/pe/build_resource_cases.py)
//! against the warning kinds pefile 2024.8.26 raised on it
//! (tests/pe/expected_resource_warnings.py prints `EXPECTED`).

use std::collections::BTreeSet;
use std::path::Path;

use crate::ember2024::{warning_id, PEFILE_WARNINGS};
use crate::pe::Pe;

const EXPECTED: &[(&str, &[&str])] = &[
    ("exe64_res_data_entry_truncated.exe", &["Byte 0x...", "Corrupt header..."]),
    ("exe64_res_data_entry_unreadable.exe", &["Byte 0x...", "Error parsing a resource directory data entry..."]),
    ("exe64_res_depth_excessive.exe", &["Byte 0x...", "Error parsing the resources directory. Excessively nested table depth..."]),
    ("exe64_res_dir_entries_huge.exe", &["Byte 0x...", "Error parsing the resources directory. The directory contains..."]),
    ("exe64_res_dir_loop_to_root.exe", &["Byte 0x..."]),
    ("exe64_res_dir_rva_unreadable.exe", &["Byte 0x...", "Invalid resources directory. Can't read..."]),
    ("exe64_res_dir_truncated.exe", &["Byte 0x...", "Corrupt header...", "Invalid resources directory. Can't parse directory data at RVA..."]),
    // (no kind) Error parsing the resources directory, Entry 0 is invalid, RVA = 0x57fc. 
    ("exe64_res_entry_truncated.exe", &["Byte 0x...", "Corrupt header..."]),
    ("exe64_res_name_unrenderable.exe", &["Byte 0x...", "Failed rendering pascal string, attempting to read from RVA 0x..."]),
    ("exe64_res_names_overlap.exe", &["Byte 0x...", "Error parsing the resources directory, attempting to read entry name. Entry names overlap..."]),
    ("exe64_res_rt_string_garbage.exe", &["Byte 0x..."]),
    ("exe64_res_rt_string_unreadable.exe", &["Byte 0x...", "Error parsing resource of type RT_STRING at..."]),
    ("exe64_res_size_exceeds_file.exe", &["Byte 0x...", "Resource size..."]),
    ("exe64_res_total_entries_huge.exe", &["Byte 0x...", "Error parsing the resources directory. The file contains at least..."]),
    ("exe64_res_tree_garbage_0.exe", &["Byte 0x...", "Error parsing a resource directory data entry...", "Invalid resources directory. Can't read...", "Resource size..."]),
    ("exe64_res_tree_garbage_1.exe", &["Byte 0x...", "Error parsing a resource directory data entry...", "Invalid resources directory. Can't read...", "Resource size..."]),
    ("exe64_res_tree_garbage_2.exe", &["Byte 0x...", "Error parsing a resource directory data entry...", "Invalid resources directory. Can't read...", "Resource size..."]),
    ("exe64_res_version_fixed_truncated.exe", &["Byte 0x...", "Corrupt header..."]),
    ("exe64_res_version_garbage_0.exe", &["Byte 0x..."]),
    ("exe64_res_version_garbage_1.exe", &["Byte 0x..."]),
    ("exe64_res_version_garbage_2.exe", &["Byte 0x..."]),
    ("exe64_res_version_key_invalid.exe", &["Byte 0x...", "Invalid VS_VERSION_INFO block..."]),
    ("exe64_res_version_key_invalid_long.exe", &["Byte 0x...", "Invalid VS_VERSION_INFO block..."]),
    ("exe64_res_version_key_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read VS_VERSION_INFO string...", "Invalid VS_VERSION_INFO block..."]),
    ("exe64_res_version_near_4gib.exe", &["Byte 0x...", "Error parsing the version information, attempting to read StringFileInfo string...", "Suspicious value found parsing section..."]),
    ("exe64_res_version_offset_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read OffsetToData with RVA..."]),
    ("exe64_res_version_string_info_key_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read StringFileInfo string..."]),
    ("exe64_res_version_string_info_truncated.exe", &["Byte 0x...", "Corrupt header...", "Error parsing StringFileInfo/VarFileInfo struct..."]),
    ("exe64_res_version_string_key_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read StringTable Key string..."]),
    // (no kind) Error parsing the version information, attempting to read StringTable Value string. Can't read unicode string at offset 0x5800
    ("exe64_res_version_string_value_unreadable.exe", &["Byte 0x..."]),
    ("exe64_res_version_table_key_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read StringTable string..."]),
    ("exe64_res_version_var_key_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read VarFileInfo Var string..."]),
];

fn case(name: &str) -> Vec<u8> {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("tests/golden/pe/resources")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn warnings(data: &[u8]) -> Vec<String> {
    Pe::parse(data).expect("a PE").warnings().to_vec()
}

#[test]
fn warning_kinds_are_pefiles() {
    let on_disk = std::fs::read_dir(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/golden/pe/resources"),
    )
    .expect("tests/golden/pe/resources")
    .count();
    assert_eq!(on_disk, EXPECTED.len(), "a case without expectations");
    for &(name, kinds) in EXPECTED {
        let expected: BTreeSet<usize> = kinds
            .iter()
            .map(|kind| {
                PEFILE_WARNINGS
                    .iter()
                    .position(|k| k == kind)
                    .unwrap_or_else(|| panic!("unknown kind {kind}"))
            })
            .collect();
        let seen: BTreeSet<usize> = warnings(&case(name))
            .iter()
            .filter_map(|w| warning_id(w))
            .collect();
        assert_eq!(seen, expected, "{name}");
    }
}

/// Warnings thrember has no kind for are still raised, in pefile's words.
#[test]
fn warnings_without_a_kind_keep_pefiles_wording() {
    for (name, warning) in [
        (
            "exe64_res_entry_truncated.exe",
            "Error parsing the resources directory, Entry 0 is invalid, RVA = 0x57fc. ",
        ),
        (
            "exe64_res_version_string_value_unreadable.exe",
            "Error parsing the version information, attempting to read StringTable Value string. Can't read unicode string at offset 0x5800",
        ),
    ] {
        let raised = warnings(&case(name));
        assert!(raised.iter().any(|w| w == warning), "{name}: {raised:?}");
    }
}

#[test]
fn dword_align_is_pefiles_including_its_32_bit_mask() {
    assert_eq!(super::version::dword_align(38, 0x5328), 40);
    assert_eq!(super::version::dword_align(92, 0x159A), 96);
    assert_eq!(
        super::version::dword_align(92, 0xFFFF_FFC0),
        0x1C - 0xFFFF_FFC0
    );
}

#[test]
fn strings_encode_as_python_with_backslashreplace() {
    let units: Vec<u8> = [0x41u16, 0xE9, 0x4E2D, 0xD800]
        .iter()
        .flat_map(|u| u.to_le_bytes())
        .collect();
    assert_eq!(
        super::strings::encode_units(&units, super::strings::Encoding::Utf8),
        "Aé中\\ud800".as_bytes()
    );
    assert_eq!(
        super::strings::encode_units(&units, super::strings::Encoding::Ascii),
        b"A\\xe9\\u4e2d\\ud800"
    );
}
