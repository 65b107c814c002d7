//! Fuzz target `authenticode`: thrember's Authenticode features
//! (`crates/rustfx/src/ember2024/authenticode/`), which parse DER from untrusted PE files. Any
//! bytes give a value, never a panic, a stack overflow or an unbounded
//! allocation; the result is deterministic and bounded by the input.
//!
//! The first byte picks the mode: even, the rest is the certificate blob of a
//! fixed minimal PE32+ shell (so the fuzzer spends its time in the DER
//! reader); odd, the rest is the whole file (signify's PE header walk).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustfx::ember2024::authenticode::{authenticode, AUTHENTICODE_WIDTH};

/// A PE32+ header with a security directory pointing at one WIN_CERTIFICATE
/// record (revision 0x200, type 2) that holds `blob`.
fn signed_shell(blob: &[u8]) -> Vec<u8> {
    const PE_OFFSET: usize = 0x40;
    const OPTIONAL_HEADER: usize = PE_OFFSET + 24;
    const OPTIONAL_HEADER_SIZE: usize = 240;
    const TABLE: usize = OPTIONAL_HEADER + OPTIONAL_HEADER_SIZE;
    let mut file = vec![0u8; TABLE];
    file[..2].copy_from_slice(b"MZ");
    file[0x3C..0x40].copy_from_slice(&(PE_OFFSET as u32).to_le_bytes());
    file[PE_OFFSET..PE_OFFSET + 4].copy_from_slice(b"PE\0\0");
    file[PE_OFFSET + 20..PE_OFFSET + 22]
        .copy_from_slice(&(OPTIONAL_HEADER_SIZE as u16).to_le_bytes());
    file[OPTIONAL_HEADER..OPTIONAL_HEADER + 2].copy_from_slice(&0x20Bu16.to_le_bytes());
    file[OPTIONAL_HEADER + 108..OPTIONAL_HEADER + 112].copy_from_slice(&16u32.to_le_bytes());
    let record_length = 8 + blob.len() as u32;
    let directory = OPTIONAL_HEADER + 144;
    file[directory..directory + 4].copy_from_slice(&(TABLE as u32).to_le_bytes());
    file[directory + 4..directory + 8].copy_from_slice(&record_length.to_le_bytes());
    file.extend_from_slice(&record_length.to_le_bytes());
    file.extend_from_slice(&0x200u16.to_le_bytes());
    file.extend_from_slice(&2u16.to_le_bytes());
    file.extend_from_slice(blob);
    file
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let file = if mode % 2 == 0 {
        signed_shell(rest)
    } else {
        rest.to_vec()
    };
    let pe_timestamp = u32::from(mode) << 24;
    let features = authenticode(&file, pe_timestamp);
    // Each SignedData takes well over 16 bytes of DER.
    assert!(
        features.num_certs as usize <= file.len() / 16,
        "{} signatures from {} bytes",
        features.num_certs,
        file.len()
    );
    assert!(features.latest_signing_time.is_finite() && features.signing_time_diff.is_finite());
    let mut values = [0f32; AUTHENTICODE_WIDTH];
    features.write(&mut values);
    for flag in &values[1..5] {
        assert!(*flag == 0.0 || *flag == 1.0, "flag {flag}");
    }
    assert_eq!(authenticode(&file, pe_timestamp), features);
});
