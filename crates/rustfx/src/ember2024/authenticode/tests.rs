//! Bit-for-bit checks against thrember's goldens, and the parsers' edge cases.

use super::cert_table::{read_u16, read_u32};
use super::der::{Der, CONSTRUCTED, CONTEXT, TAG_OID, TAG_SEQUENCE, TAG_SET};
use super::signed_data::{MAX_NESTED_SIGNATURES, NESTED_SIGNATURE};
use super::time::{fraction_to_micros, micros_to_seconds};
use super::*;
use std::path::Path;

const GOLDEN: &str = "tests/golden/thrember_authenticode.tsv";

fn repo_file(relative: &str) -> Vec<u8> {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn features_bits(data: &[u8], pe_timestamp: u32) -> [u32; AUTHENTICODE_WIDTH] {
    let mut values = [0f32; AUTHENTICODE_WIDTH];
    authenticode(data, pe_timestamp).write(&mut values);
    values.map(f32::to_bits)
}

/// Also a differential check: AUTHENTICODE_GOLDEN=table.tsv (from the generator's
/// DIR OUT form) compares other files, with no minimum count.
#[test]
fn matches_thrember_bit_for_bit() {
    let other = std::env::var("AUTHENTICODE_GOLDEN").ok();
    let golden = String::from_utf8(repo_file(other.as_deref().unwrap_or(GOLDEN))).unwrap();
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for row in golden.lines().skip(1) {
        let columns: Vec<&str> = row.split('\t').collect();
        let (path, pe_timestamp) = (columns[0], columns[2].parse::<u32>().unwrap());
        let expected: Vec<u32> = columns[3..3 + AUTHENTICODE_WIDTH]
            .iter()
            .map(|hex| u32::from_str_radix(hex, 16).unwrap())
            .collect();
        let actual = features_bits(&repo_file(path), pe_timestamp);
        if actual[..] != expected[..] {
            let got: Vec<f32> = actual.iter().map(|&b| f32::from_bits(b)).collect();
            let want: Vec<f32> = expected.iter().map(|&b| f32::from_bits(b)).collect();
            mismatches.push(format!("{path}: got {got:?}, thrember {want:?}"));
        }
        checked += 1;
    }
    assert!(
        checked >= 40 || other.is_some(),
        "only {checked} golden rows"
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// (offset of the security directory entry, table address) of a test PE.
fn table_of(data: &[u8]) -> (usize, usize) {
    let e_lfanew = read_u32(data, 0x3C).unwrap() as usize;
    let optional = e_lfanew + 24;
    let entry = optional
        + if read_u16(data, optional as u64) == Some(0x10B) {
            128
        } else {
            144
        };
    (entry, read_u32(data, entry as u64).unwrap() as usize)
}

/// `data` with its certificate table replaced by one type-2 record holding `blob`.
fn with_blob(data: &[u8], blob: &[u8]) -> Vec<u8> {
    let (entry, address) = table_of(data);
    let mut out = data[..address].to_vec();
    let length = 8 + blob.len() as u32;
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(&0x200u16.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(blob);
    out[entry + 4..entry + 8].copy_from_slice(&length.to_le_bytes());
    out
}

fn signed_blob(data: &[u8]) -> Vec<u8> {
    let (_, address) = table_of(data);
    let length = read_u32(data, address as u64).unwrap() as usize;
    data[address + 8..address + length].to_vec()
}

#[test]
fn every_truncation_of_a_signature_is_handled() {
    let data = repo_file("tests/golden/pe/signed/cli64_nested.exe");
    let blob = signed_blob(&data);
    for cut in 0..blob.len() {
        let features = authenticode(&with_blob(&data, &blob[..cut]), 0);
        // No prefix of a DER element is itself complete.
        assert!(features.parse_error || cut == 0, "cut {cut}: {features:?}");
    }
    // Cutting the file itself anywhere in or before the table.
    for cut in (0..data.len()).step_by(61) {
        authenticode(&data[..cut], 0);
    }
}

#[test]
fn every_flipped_byte_of_a_signature_is_handled() {
    let data = repo_file("tests/golden/pe/signed/cli64_chain_ts.exe");
    let (_, address) = table_of(&data);
    let mut mutated = data.clone();
    for index in address..data.len() {
        for mask in [0x01, 0x80, 0xFF] {
            mutated[index] ^= mask;
            authenticode(&mutated, 0);
            mutated[index] ^= mask;
        }
    }
}

#[test]
fn deep_nesting_and_huge_lengths_are_parse_errors() {
    let data = repo_file("tests/golden/pe/signed/cli64_chain.exe");
    let mut deep = Vec::new();
    for _ in 0..100_000 {
        deep.extend_from_slice(&[0x30, 0x80]);
    }
    let huge: [&[u8]; 4] = [
        &[0x30, 0x88, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
        &[0x30, 0x89, 1, 0, 0, 0, 0, 0, 0, 0, 0],
        &[0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xF0, 0x06],
        &[0x30, 0x82, 0x00, 0x05, 0x06, 0x01],
    ];
    for blob in [deep.as_slice()].into_iter().chain(huge) {
        let features = authenticode(&with_blob(&data, blob), 0);
        assert_eq!(
            features,
            Authenticode {
                parse_error: true,
                ..Authenticode::default()
            }
        );
    }
}

#[test]
fn nested_signatures_past_the_limit_are_parse_errors() {
    // A chain of nested signatures, each the previous one's only nested attribute.
    let data = repo_file("tests/golden/pe/signed/cli64_chain.exe");
    let base = signed_blob(&data);
    let mut blob = trim_to_first_element(&base).to_vec();
    for _ in 0..MAX_NESTED_SIGNATURES + 2 {
        blob = nest_inside(&base, &blob);
    }
    let features = authenticode(&with_blob(&data, &blob), 0);
    assert!(
        features.parse_error && features.num_certs == 0,
        "{features:?}"
    );
    // thrember answers 101 signatures for 100 levels (measured; 109 levels crash it).
    let mut blob = trim_to_first_element(&base).to_vec();
    for _ in 0..100 {
        blob = nest_inside(&base, &blob);
    }
    let features = authenticode(&with_blob(&data, &blob), 0);
    assert_eq!((features.num_certs, features.parse_error), (101, false));
}

fn trim_to_first_element(blob: &[u8]) -> &[u8] {
    let mut reader = Der::new(blob);
    reader.next().unwrap();
    &blob[..blob.len() - reader.rest.len()]
}

fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let length = content.len();
    if length < 0x80 {
        out.push(length as u8);
    } else {
        let bytes = (length as u32).to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (4 - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// `outer` (a ContentInfo without unsigned attributes) with `inner` as its nested
/// signature; re-encodes every enclosing length.
fn nest_inside(outer: &[u8], inner: &[u8]) -> Vec<u8> {
    let attribute = der(
        TAG_SEQUENCE,
        &[der(TAG_OID, NESTED_SIGNATURE), der(TAG_SET, inner)].concat(),
    );
    let unsigned = der(CONTEXT | CONSTRUCTED | 1, &attribute);
    // ContentInfo > [0] > SignedData > signerInfos SET > SignerInfo: append `unsigned`.
    let content_info = Der::new(outer).expect(TAG_SEQUENCE).unwrap();
    let mut info_fields = Der::new(content_info);
    let oid = info_fields.expect(TAG_OID).unwrap();
    let explicit = info_fields.expect(CONTEXT | CONSTRUCTED).unwrap();
    let signed_data = Der::new(explicit).expect(TAG_SEQUENCE).unwrap();
    let mut fields = Der::new(signed_data);
    let mut kept = Vec::new();
    let mut signer_infos = None;
    while !fields.is_empty() {
        let before = fields.rest;
        let element = fields.next().unwrap();
        let raw = &before[..before.len() - fields.rest.len()];
        if element.tag == TAG_SET && fields.is_empty() {
            signer_infos = Some(element.content);
        } else {
            kept.extend_from_slice(raw);
        }
    }
    let signer = Der::new(signer_infos.unwrap())
        .expect(TAG_SEQUENCE)
        .unwrap();
    let signer = der(TAG_SEQUENCE, &[signer, &unsigned].concat());
    kept.extend_from_slice(&der(TAG_SET, &signer));
    let signed_data = der(TAG_SEQUENCE, &kept);
    der(
        TAG_SEQUENCE,
        &[der(TAG_OID, oid), der(CONTEXT | CONSTRUCTED, &signed_data)].concat(),
    )
}

#[test]
fn fractions_round_half_down_like_asn1crypto() {
    let cases: [(&[u8], i128, i128); 6] = [
        (b"5", 1, 500_000),
        (b"0000005", 1, 0),
        (b"0000015", 1, 1),
        (b"00000051", 1, 1),
        (b"123456789", 3600, 444_444_440),
        (b"75", 60, 45_000_000),
    ];
    for (digits, unit, micros) in cases {
        assert_eq!(fraction_to_micros(digits, unit), micros, "{digits:?}");
    }
}

#[test]
fn seconds_are_correctly_rounded_like_python_true_division() {
    // (micros, bits of Python's micros / 10**6), beyond 2**53 where f64 is inexact.
    let cases: [(i128, u64); 6] = [
        (9_007_199_254_740_993, 0x4200c6f7a0b5ed8e),
        (288_230_376_151_711_747, 0x4250c6f7a0b5ed8d),
        (-144_115_188_075_855_879, 0xc240c6f7a0b5ed8d),
        (253_402_300_799_123_457, 0x424d7ffa20bf8fcd),
        (253_402_300_799_999_999, 0x424d7ffa20c00000),
        (27_021_597_764_722_976, 0x42192a737112e454),
    ];
    for (micros, bits) in cases {
        assert_eq!(micros_to_seconds(micros).to_bits(), bits, "{micros}");
    }
}
