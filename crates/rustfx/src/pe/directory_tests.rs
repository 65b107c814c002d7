//! The directory readers against pefile on tests/golden/pe/directories
//! (built by tests/pe/build_directory_cases.py): for each file, the kinds
//! of warning pefile raises and `has_dynamic_relocs()`, or the exception
//! `PE()` raises (rustfx: not a PE). The table is the output of
//! tests/pe/expected_directory_warnings.py.

use super::Pe;
use crate::ember2024::{warning_id, PEFILE_WARNINGS};
use std::path::Path;

/// pefile's verdict: (warning kinds, has_dynamic_relocs), or the name of
/// the exception `PE()` raised.
type Verdict = Result<(&'static [&'static str], bool), &'static str>;

const EXPECTED: &[(&str, Verdict)] = &[
    ("bound_import_in_headers.exe", Ok((&["Byte 0x..."], false))),
    (
        "bound_import_in_overlay.exe",
        Ok((
            &[
                "Byte 0x...",
                "RVA of IMAGE_BOUND_IMPORT_DESCRIPTOR points...",
            ],
            false,
        )),
    ),
    (
        "bound_import_past_eof.exe",
        Ok((
            &[
                "Byte 0x...",
                "Corrupt header...",
                "The Bound Imports directory exists but can't be parsed...",
            ],
            false,
        )),
    ),
    (
        "debug_codeview_nb10_truncated.exe",
        Ok((&["Byte 0x...", "Corrupt header..."], false)),
    ),
    (
        "debug_codeview_rsds_truncated.exe",
        Ok((&["Byte 0x...", "Corrupt header..."], false)),
    ),
    (
        "debug_dir_past_eof.exe",
        Ok((&["Byte 0x...", "Invalid debug information..."], false)),
    ),
    (
        "debug_entry_truncated.exe",
        Ok((&["Byte 0x...", "Corrupt header..."], false)),
    ),
    (
        "debug_ex_dllcharacteristics_empty.exe",
        Err("AttributeError"),
    ),
    (
        "debug_misc_truncated.exe",
        Ok((&["Byte 0x...", "Corrupt header..."], false)),
    ),
    (
        "debug_misc_unicode_2_truncated.exe",
        Ok((&["Byte 0x..."], false)),
    ),
    (
        "delay_import_descriptor_truncated.exe",
        Ok((&["Byte 0x...", "Corrupt header..."], false)),
    ),
    (
        "delay_import_old_style_vas.exe",
        Ok((&["Byte 0x..."], false)),
    ),
    (
        "delay_import_past_eof.exe",
        Ok((
            &[
                "Byte 0x...",
                "Error parsing the Delay import directory at RVA...",
            ],
            false,
        )),
    ),
    (
        "delay_import_thunk_at_image_base.exe",
        Ok((
            &["Byte 0x...", "Error parsing the Delay import directory..."],
            false,
        )),
    ),
    (
        "delay_import_too_many_errors.exe",
        Ok((
            &[
                "Byte 0x...",
                "Damaged Import Table information...",
                "Too many errors parsing the Delay import directory...",
            ],
            false,
        )),
    ),
    (
        "delay_import_too_many_symbols.exe",
        Ok((
            &[
                "Byte 0x...",
                "Error, too many imported symbols...",
                "Excessive number of imports...",
            ],
            false,
        )),
    ),
    ("delay_import_valid.exe", Ok((&["Byte 0x..."], false))),
    (
        "load_config_bad_magic.exe",
        Ok((
            &[
                "Byte 0x...",
                "Don't know how to parse LOAD_CONFIG information for non-PE32...",
                "Invalid type 0x...",
            ],
            false,
        )),
    ),
    (
        "load_config_dynamic_entry_truncated.exe",
        Ok((&["Byte 0x...", "Corrupt header..."], true)),
    ),
    (
        "load_config_dynamic_relocs_overlapping.exe",
        Ok((
            &["Byte 0x...", "Overlapping offsets in relocation data..."],
            true,
        )),
    ),
    (
        "load_config_dynamic_relocs_v1.exe",
        Ok((&["Byte 0x..."], true)),
    ),
    (
        "load_config_dynamic_relocs_v2.exe",
        Ok((
            &[
                "Byte 0x...",
                "No parsing available for IMAGE_DYNAMIC_RELOCATION_TABLE...",
            ],
            false,
        )),
    ),
    (
        "load_config_dynamic_table_past_eof.exe",
        Ok((
            &[
                "Byte 0x...",
                "Invalid IMAGE_DYNAMIC_RELOCATION_TABLE information...",
            ],
            false,
        )),
    ),
    (
        "load_config_dynamic_table_truncated.exe",
        Err("AttributeError"),
    ),
    (
        "load_config_function_override.exe",
        Ok((&["Byte 0x..."], true)),
    ),
    (
        "load_config_function_override_no_bdd_info.exe",
        Ok((
            &["Byte 0x...", "Corrupt header...", "Invalid bdd info..."],
            true,
        )),
    ),
    (
        "load_config_function_override_no_bdd_relocation.exe",
        Ok((
            &[
                "Byte 0x...",
                "Corrupt header...",
                "Invalid bdd dynamic relocation...",
            ],
            true,
        )),
    ),
    (
        "load_config_function_override_no_header.exe",
        Ok((
            &[
                "Byte 0x...",
                "Corrupt header...",
                "Invalid function override header...",
            ],
            true,
        )),
    ),
    (
        "load_config_function_override_no_info.exe",
        Ok((
            &[
                "Byte 0x...",
                "Corrupt header...",
                "Invalid function override info...",
            ],
            true,
        )),
    ),
    ("load_config_function_override_no_rvas.exe", Err("error")),
    ("load_config_size_36_fields.exe", Err("AttributeError")),
    (
        "reloc_entries_past_eof.exe",
        Ok((&["Bad RVA in relocation data...", "Byte 0x..."], false)),
    ),
    (
        "reloc_overlapping_entries.exe",
        Ok((
            &["Byte 0x...", "Overlapping offsets in relocation data..."],
            false,
        )),
    ),
    (
        "reloc_same_offset_other_type.exe",
        Ok((&["Byte 0x..."], false)),
    ),
    (
        "tls_dir_past_eof.exe",
        Ok((
            &["Byte 0x...", "Invalid TLS information. Can't read..."],
            false,
        )),
    ),
    (
        "tls_dir_truncated.exe",
        Ok((&["Byte 0x...", "Corrupt header..."], false)),
    ),
    (
        "unwind_chain_shared.exe",
        Ok((
            &[
                "Byte 0x...",
                "Failed parsing FunctionEntry of UNWIND_INFO at...",
            ],
            false,
        )),
    ),
    (
        "unwind_chain_to_nowhere.exe",
        Ok((&["Byte 0x...", "FunctionEntry of UNWIND_INFO at..."], false)),
    ),
    (
        "unwind_code_past_end.exe",
        Ok((&["Byte 0x...", "Failed to process directory..."], false)),
    ),
    ("unwind_every_code.exe", Ok((&["Byte 0x..."], false))),
    (
        "unwind_runtime_function_truncated.exe",
        Ok((&["Byte 0x...", "Corrupt header..."], false)),
    ),
    (
        "unwind_unknown_code.exe",
        Ok((&["Byte 0x...", "Unknown UNWIND_CODE at..."], false)),
    ),
    (
        "unwind_unknown_code_after_epilogs.exe",
        Ok((&["Byte 0x...", "Unknown UNWIND_CODE at..."], false)),
    ),
    (
        "unwind_version_3.exe",
        Ok((
            &["Byte 0x...", "Unsupported version of UNWIND_INFO..."],
            false,
        )),
    ),
];

fn case(name: &str) -> Vec<u8> {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("tests/golden/pe/directories")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn directory_cases_warn_as_pefile_does() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("tests/golden/pe/directories");
    let on_disk = std::fs::read_dir(dir).unwrap().count();
    assert_eq!(on_disk, EXPECTED.len(), "a file without an expectation");
    for &(name, expected) in EXPECTED {
        let data = case(name);
        let ours = Pe::parse(&data).map(|pe| {
            let mut kinds: Vec<&str> = pe
                .warnings()
                .iter()
                .filter_map(|w| warning_id(w))
                .map(|id| PEFILE_WARNINGS[id])
                .collect();
            kinds.sort_unstable();
            kinds.dedup();
            (kinds, pe.has_dynamic_relocs)
        });
        match (expected, ours) {
            (Ok((kinds, dynamic)), Ok((our_kinds, our_dynamic))) => {
                let mut kinds = kinds.to_vec();
                kinds.sort_unstable();
                assert_eq!(our_kinds, kinds, "{name}: warning kinds");
                assert_eq!(our_dynamic, dynamic, "{name}: has_dynamic_relocs");
            }
            (Err(_), Err(_)) => {}
            (expected, ours) => panic!("{name}: pefile {expected:?}, rustfx {ours:?}"),
        }
    }
}

/// `cargo test --lib dump_directory_case_warnings -- --ignored --nocapture`
/// prints rustfx's warnings verbatim, to compare with
/// `expected_directory_warnings.py --raw`.
#[test]
#[ignore]
fn dump_directory_case_warnings() {
    for &(name, _) in EXPECTED {
        let data = case(name);
        match Pe::parse(&data) {
            Ok(pe) => {
                println!(
                    "{name} {}",
                    if pe.has_dynamic_relocs {
                        "True"
                    } else {
                        "False"
                    }
                );
                for w in pe.warnings() {
                    println!("    {w}");
                }
            }
            Err(e) => println!("    (\"{name}\", Err({:?})),", e.0),
        }
    }
}
