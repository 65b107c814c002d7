//! The printable-byte class and the string scan, across chunk boundaries.

use super::*;

#[test]
fn printable_mask_matches_the_byte_class() {
    for b in 0..=255u8 {
        let w = u64::from_le_bytes([b, 0, 0x20, 0x7f, 0x80, b, 0x1f, b]);
        let m = printable_mask(w);
        assert_eq!(m & 0x80 != 0, is_printable(b), "byte {b:#x}");
        assert_eq!(m >> 8 & 0xff, 0);
        assert_eq!(m >> 16 & 0xff, 0x80);
        assert_eq!(m >> 24 & 0xff, 0x80);
        assert_eq!(m >> 32 & 0xff, 0);
        assert_eq!(m >> 48 & 0xff, 0);
        assert_eq!(m >> 40 & 0x80 != 0, is_printable(b));
        assert_eq!(m >> 56 & 0x80 != 0, is_printable(b));
    }
}

#[test]
fn printable_bits_match_the_byte_class() {
    let background: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8).collect();
    for b in 0..=255u8 {
        for pos in 0..64 {
            let mut chunk = [0u8; 64];
            chunk.copy_from_slice(&background);
            chunk[pos] = b;
            let expected = chunk
                .iter()
                .enumerate()
                .fold(0u64, |m, (i, &c)| m | (u64::from(is_printable(c)) << i));
            assert_eq!(printable_bits(&chunk), expected, "byte {b:#x} at {pos}");
        }
    }
}

#[test]
fn strings_across_chunk_boundaries() {
    // Runs of every length around 5 (the minimum), 32 (where a chunk is
    // counted whole) and 64 (a chunk), starting at every offset around the
    // first two chunk boundaries, between non-printable bytes of each kind.
    let mut run_lengths: Vec<usize> = (1..=9).collect();
    run_lengths.extend(30..=34);
    run_lengths.extend(62..=66);
    run_lengths.extend([127, 128, 129]);
    for &gap in &[0x00u8, 0x0A, 0x1F, 0x80, 0xFF] {
        for &run in &run_lengths {
            for start in 0..=140 {
                let mut data = vec![gap; start + run + 3];
                let text = b"MZ c:\\http://HKEY_~\x7f az";
                for (i, b) in data[start..start + run].iter_mut().enumerate() {
                    *b = text[i % text.len()];
                }
                let mut sf = [1.5f32; 104];
                string_features(&data, EmptyInput::Zeros, &mut sf);
                assert_eq!(
                    bits(&sf),
                    bits(&oracle_string_features(&data)),
                    "gap {gap:#x} run {run} start {start}"
                );
            }
        }
    }
    // Two runs separated by one gap byte, the gap at every position.
    for cut in 0..=140 {
        let mut data = vec![b'x'; 141];
        data[cut] = 0;
        let mut sf = [1.5f32; 104];
        string_features(&data, EmptyInput::Zeros, &mut sf);
        assert_eq!(bits(&sf), bits(&oracle_string_features(&data)), "cut {cut}");
        assert_eq!(scanned_strings(&data), oracle_strings(&data), "cut {cut}");
    }
    for len in [0, 1, 4, 5, 63, 64, 65, 127, 128, 129] {
        let data = vec![b'x'; len];
        assert_eq!(scanned_strings(&data), oracle_strings(&data), "len {len}");
    }
}
