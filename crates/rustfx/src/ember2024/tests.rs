//! `ember_features` against thrember's own vectors on the PE corpus
//! (tests/golden/pe, tests/golden/thrember_pe.tsv; see tests/pe/README.md).

use super::*;
use std::path::Path;

const GOLDEN: &str = include_str!("../../../../tests/golden/thrember_pe.tsv");

/// The (file, group) pairs where rustfx differs from thrember, and why.
/// The test fails if any other pair differs, and also if one of these
/// stops differing (then it is fixed and comes off the list).
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "nonpe/empty.bin",
        "histogram",
        "thrember divides 0 by 0 (NaN); rustfx gives zeros, as its byte_histogram does by default",
    ),
    ("nonpe/empty.bin", "byteentropy", "as histogram"),
    (
        "directories/delay_import_past_eof.exe",
        "pefilewarnings",
        "pefile's 'Error parsing the Delay import directory at RVA' warning starts with two of \
         thrember's kinds; thrember takes the first in Python set order, which depends on \
         PYTHONHASHSEED (the goldens use 0: the shorter kind; seed 2 gives the longer, which \
         rustfx always takes)",
    ),
];

struct Golden<'a> {
    path: &'a str,
    groups: Vec<&'a str>,
}

fn golden() -> impl Iterator<Item = Golden<'static>> {
    GOLDEN.lines().filter(|l| !l.starts_with('#')).map(|line| {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 15, "malformed golden line: {line}");
        Golden {
            path: fields[0],
            groups: fields[2..14].to_vec(),
        }
    })
}

fn bits(values: &[f32]) -> String {
    values
        .iter()
        .map(|v| format!("{:08x}", v.to_bits()))
        .collect::<Vec<_>>()
        .join(",")
}

fn corpus_file(path: &str) -> Vec<u8> {
    let full = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("tests/golden/pe")
        .join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

#[test]
fn every_group_equals_thrember_on_the_corpus() {
    let extractor = EmberFeatures::new(3, &[]).unwrap();
    let mut differences = Vec::new();
    let mut files = 0;
    let mut crashes = 0;
    for golden in golden() {
        let data = corpus_file(golden.path);
        let row = extractor.row(&data);
        // pefile raised what thrember does not catch (thrember fails on the
        // whole file): rustfx's defined answer is "not a PE".
        if golden.groups[0].starts_with("crash:") {
            assert_eq!(row[2], 0.0, "{}: is_pe", golden.path);
            assert!(row[696..].iter().all(|&v| v == 0.0), "{}", golden.path);
            crashes += 1;
            continue;
        }
        let mut offset = 0;
        for (group, expected) in EmberGroup::ALL.iter().zip(&golden.groups) {
            let ours = &row[offset..offset + group.width()];
            offset += group.width();
            // thrember raises here (only `general` on the empty file): the
            // defined answer is zeros.
            if expected.starts_with("error:") {
                assert!(
                    ours.iter().all(|&v| v == 0.0),
                    "{}: {}",
                    golden.path,
                    group.name()
                );
                continue;
            }
            if bits(ours) != *expected {
                differences.push((golden.path, group.name()));
            }
        }
        files += 1;
    }
    assert!(files >= 230, "only {files} golden files");
    assert!(crashes <= 2, "{crashes} files where thrember itself fails");
    let known: Vec<(&str, &str)> = KNOWN_DIFFERENCES.iter().map(|&(f, g, _)| (f, g)).collect();
    let unexpected: Vec<_> = differences.iter().filter(|d| !known.contains(d)).collect();
    assert!(
        unexpected.is_empty(),
        "differ from thrember: {unexpected:?}"
    );
    let fixed: Vec<_> = known.iter().filter(|k| !differences.contains(k)).collect();
    assert!(
        fixed.is_empty(),
        "no longer differ (take them off the list): {fixed:?}"
    );
}

#[test]
fn one_group_alone_equals_its_slice_of_the_whole_row() {
    let all = EmberFeatures::new(3, &[]).unwrap();
    let data = corpus_file("built/dll64_exports.dll");
    let row = all.row(&data);
    let mut offset = 0;
    for group in EmberGroup::ALL {
        let alone = EmberFeatures::new(3, &[group]).unwrap().row(&data);
        assert_eq!(
            alone,
            row[offset..offset + group.width()],
            "{}",
            group.name()
        );
        offset += group.width();
    }
    assert_eq!(offset, EMBER_FEATURES_DIM);
    // Groups come out in the order asked for.
    let pair = EmberFeatures::new(
        3,
        &[
            EmberGroup::Pe(PeGroup::Exports),
            EmberGroup::Pe(PeGroup::Header),
        ],
    )
    .unwrap();
    let exports = EmberFeatures::new(3, &[EmberGroup::Pe(PeGroup::Exports)])
        .unwrap()
        .row(&data);
    assert_eq!(pair.row(&data)[..129], exports[..]);
}

#[test]
fn names_match_widths_and_are_unique() {
    let names = EmberFeatures::new(3, &[]).unwrap().feature_names();
    assert_eq!(names.len(), EMBER_FEATURES_DIM);
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len());
    assert_eq!(names[2], "general_is_pe");
    assert_eq!(names[696 + 5], "header_machine");
    assert_eq!(names[EMBER_FEATURES_DIM - 1], "pefilewarnings_count");
}

#[test]
fn groups_come_in_thrembers_order_and_round_trip_their_names() {
    assert_eq!(
        EmberGroup::NAMES,
        [
            "general",
            "histogram",
            "byteentropy",
            "strings",
            "header",
            "section",
            "imports",
            "exports",
            "datadirectories",
            "richheader",
            "authenticode",
            "pefilewarnings",
        ]
    );
    for (group, &name) in EmberGroup::ALL.into_iter().zip(EmberGroup::NAMES) {
        assert_eq!(group.name(), name);
        assert_eq!(EmberGroup::from_name(name).unwrap(), group);
    }
    for &group in PeGroup::VALUES {
        assert_eq!(EmberGroup::from_name(group.name()).unwrap(), group.into());
        assert!(EmberGroup::from(group).needs_pe());
    }
    let total: usize = EmberGroup::ALL.iter().map(|g| g.width()).sum();
    assert_eq!(total, EMBER_FEATURES_DIM);
    let e = EmberGroup::from_name("nope").unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
    assert!(e
        .message()
        .starts_with("group must be one of general, histogram,"));
}

#[test]
fn bad_parameters_say_what_is_allowed() {
    let message = |r: Result<EmberFeatures>| r.unwrap_err().to_string();
    assert!(message(EmberFeatures::new(2, &[])).contains("feature_version must be 3"));
    assert!(message(EmberFeatures::new(
        3,
        &[
            EmberGroup::Pe(PeGroup::Header),
            EmberGroup::Pe(PeGroup::Header)
        ]
    ))
    .contains("distinct"));
    let unknown = parse_groups("header,nope").unwrap_err().to_string();
    assert!(
        unknown.contains("pefilewarnings") && unknown.contains("nope"),
        "{unknown}"
    );
    assert_eq!(parse_groups("").unwrap(), vec![]);
    assert_eq!(
        parse_groups("header, section").unwrap(),
        vec![
            EmberGroup::Pe(PeGroup::Header),
            EmberGroup::Pe(PeGroup::Section)
        ]
    );
}

#[test]
fn non_pe_and_empty_files_get_zeros_in_the_pe_groups() {
    let extractor = EmberFeatures::new(3, &[]).unwrap();
    assert!(extractor.row(b"").iter().all(|&v| v == 0.0));
    let row =
        extractor.row(b"MZ but nothing else, not a PE at all....................................");
    assert_eq!(row[2], 0.0, "is_pe");
    assert!(row[696..].iter().all(|&v| v == 0.0));
}

#[test]
fn warning_kinds_are_found_by_prefix_or_suffix() {
    let id = |w: &str| warning_id(w).map(|k| PEFILE_WARNINGS[k]);
    assert_eq!(
        id("Byte 0x00 makes up 61.2000% of the file's contents."),
        Some("Byte 0x...")
    );
    assert_eq!(
        id("Error parsing section 3. SizeOfRawData is larger than file."),
        Some("...SizeOfRawData is larger than file.")
    );
    // pefile's text ends with "256MiB." but the list's suffix does not, so
    // the prefix decides (as in thrember).
    assert_eq!(
        id("Suspicious value found parsing section 0. VirtualSize is extremely large > 256MiB."),
        Some("Suspicious value found parsing section...")
    );
    // Two suffixes match: the longer one.
    assert_eq!(
        id("Export directory contains more than 8192 symbol entries. Assuming corrupt."),
        Some("...symbol entries. Assuming corrupt.")
    );
    assert_eq!(id("something pefile never says"), None);
}
