//! `byte_counts` and `nibble_counts` against their oracles.

use super::*;

#[test]
fn counts_at_every_alignment_and_length() {
    // Lengths across the group (4), the nibble run (60) and the nibble flush
    // (240) boundaries, on mixed and on single-valued data (where every
    // narrow counter fills fastest).
    let mixed = mixed_bytes(5, 16 + 500);
    let same = vec![0xA7u8; 16 + 500];
    for buf in [&mixed, &same] {
        for offset in 0..16 {
            for len in 0..=500 {
                let d = &buf[offset..offset + len];
                assert_eq!(byte_counts(d).to_vec(), oracle_byte_counts(d), "len {len}");
                assert_eq!(
                    nibble_counts(d).to_vec(),
                    oracle_nibble_counts(d),
                    "len {len}"
                );
            }
        }
    }
}

#[test]
fn counters_at_their_flush_points() {
    // byte_counts flushes its u16 counters every 65535 groups of 4 bytes:
    // one value fills a counter of every table to exactly 65535.
    const FLUSH: usize = 65535 * 4;
    let mut lengths = vec![];
    for k in 1..=2 {
        lengths.extend([k * FLUSH - 1, k * FLUSH, k * FLUSH + 1, k * FLUSH + 4]);
    }
    for b in [0u8, 0xFF, 0x41] {
        let data = vec![b; 2 * FLUSH + 16];
        for &len in &lengths {
            for offset in [0, 3] {
                let d = &data[offset..offset + len];
                let counts = byte_counts(d);
                assert_eq!(counts[usize::from(b)], len as u64, "byte {b} len {len}");
                assert_eq!(counts.iter().sum::<u64>(), len as u64);
                let nibbles = nibble_counts(d);
                assert_eq!(nibbles[usize::from(b >> 4)], len as u64, "len {len}");
                assert_eq!(nibbles.iter().sum::<u64>(), len as u64);
            }
        }
    }
    // A period-4 pattern: each table sees one value only.
    let data: Vec<u8> = (0..FLUSH + 100).map(|i| (i % 4) as u8 * 0x51).collect();
    assert_eq!(byte_counts(&data).to_vec(), oracle_byte_counts(&data));
    assert_eq!(nibble_counts(&data).to_vec(), oracle_nibble_counts(&data));
}
