//! The fast scanners against a transliteration of GNU `strings`'
//! `print_strings` loop, edge-case tables, bounds and parameter checks.
//! (Golden vectors from the real tool: `tests/printable_strings.rs`.)

use super::*;
use crate::oracles::printable_strings::printable_strings as oracle;
use crate::ErrorKind;
use proptest::prelude::*;
use StringEncoding::{Ascii, Utf16le};

fn strings(doc: &[u8], min_len: usize, encodings: &[StringEncoding]) -> Vec<Vec<u8>> {
    PrintableStrings::new(min_len, encodings, None, None)
        .unwrap()
        .strings(doc)
}

/// Runs `s` on `doc` appending to non-empty buffers, and checks the ends
/// are consistent with the returned strings and with the oracle.
fn check(doc: &[u8], s: &PrintableStrings) {
    let expected = oracle(doc, s);
    assert_eq!(s.strings(doc), expected, "{s:?} on {doc:?}");
    let mut strings = crate::output::Strings::default();
    strings.bytes.extend_from_slice(b"prefix");
    strings.offsets.push(6);
    s.append_strings(doc, &mut strings);
    assert_eq!(strings.bytes[6..], expected.concat()[..]);
    let lens: Vec<usize> = strings.offsets.ranges().skip(1).map(|r| r.len()).collect();
    let expected_lens: Vec<usize> = expected.iter().map(Vec::len).collect();
    assert_eq!(lens, expected_lens);
}

/// (document, min_len, expected strings).
type Case = (&'static [u8], usize, &'static [&'static [u8]]);

#[test]
fn ascii_edge_cases() {
    let table: &[Case] = &[
        (b"", 1, &[]),
        (b"", 4, &[]),
        (b"abc", 4, &[]),
        (b"abcd", 4, &[b"abcd"]),
        (b"abcd\0", 4, &[b"abcd"]),
        (b"\0abcd", 4, &[b"abcd"]),
        (b"a", 1, &[b"a"]),
        (b"a\0b", 1, &[b"a", b"b"]),
        (b"a b\tc", 4, &[b"a b\tc"]),
        (b"\t\t\t\t", 4, &[b"\t\t\t\t"]),
        (b"    ", 4, &[b"    "]),
        (b"~~~~\x7f}}}}", 4, &[b"~~~~", b"}}}}"]),
        (
            b"abcd\nefgh\rijkl\x0bmnop\x0c",
            4,
            &[b"abcd", b"efgh", b"ijkl", b"mnop"],
        ),
        (b"abc\x80defg\xff", 4, &[b"defg"]),
        (b"\xe9t\xe9\xe9t\xe9", 1, &[b"t", b"t"]),
        (b"ab\x1fcd\x20ef", 3, &[b"cd ef"]),
        // A run at EOF.
        (b"\x01\x02xyz1", 4, &[b"xyz1"]),
    ];
    for &(doc, min_len, expected) in table {
        assert_eq!(
            strings(doc, min_len, &[Ascii]),
            expected,
            "{doc:?} {min_len}"
        );
    }
}

#[test]
fn utf16le_edge_cases() {
    let table: &[Case] = &[
        (b"", 1, &[]),
        (b"a", 1, &[]),
        (b"a\0", 1, &[b"a"]),
        (b"t\0e\0s\0", 4, &[]),
        (b"t\0e\0s\0t\0", 4, &[b"test"]),
        // A trailing odd byte ends the run (EOF) without being part of it.
        (b"t\0e\0s\0t\0x", 4, &[b"test"]),
        (b"t\0\t\0s\0t\0", 4, &[b"t\tst"]),
        // Odd offset from the start: (0, 'A') is not graphic, GNU steps back
        // one byte and finds "ABCDE" at offset 1.
        (b"\0A\0B\0C\0D\0E\0", 4, &[b"ABCDE"]),
        // The character ending "test" is (0, 'A'); scanning resumes at 'A'.
        (b"t\0e\0s\0t\0\0A\0B\0C\0D\0", 4, &[b"test", b"ABCD"]),
        // ... and (1, 'A') likewise.
        (b"A\0B\0C\0D\0\x01A\0B\0C\0D\0E", 4, &[b"ABCD", b"ABCD"]),
        // A failed tryline resumes one byte later too.
        (b"A\0B\0\x01X\0Y\0Z\0W\0", 4, &[b"XYZW"]),
        // (0x09, 'B') is not graphic: only "BCD" follows at offset 3.
        (b"A\0\tB\0C\0D\0", 4, &[]),
        // High byte non-zero, 0x7f, 0x80 and newline end strings.
        // (b, 1) ends "a"; resuming at 0x01 then finds "cd".
        (b"a\0b\x01c\0d\0", 1, &[b"a", b"cd"]),
        (b"a\0\x7f\0b\0", 1, &[b"a", b"b"]),
        (b"a\0\x80\0b\0\n\0c\0", 1, &[b"a", b"b", b"c"]),
        // Pure ASCII has no UTF-16 strings unless it contains NULs.
        (b"hello world", 1, &[]),
    ];
    for &(doc, min_len, expected) in table {
        assert_eq!(
            strings(doc, min_len, &[Utf16le]),
            expected,
            "{doc:?} {min_len}"
        );
    }
}

#[test]
fn encodings_concatenate_in_the_given_order() {
    let doc = b"wide: w\0i\0d\0e\0 narrow";
    let a = strings(doc, 4, &[Ascii]);
    let w = strings(doc, 4, &[Utf16le]);
    assert_eq!(a, [&b"wide: w"[..], b" narrow"]);
    assert_eq!(w, [b"wide"]);
    assert_eq!(
        strings(doc, 4, &[Ascii, Utf16le]),
        [a.clone(), w.clone()].concat()
    );
    assert_eq!(strings(doc, 4, &[Utf16le, Ascii]), [w, a].concat());
}

#[test]
fn tables_agree_with_the_oracle() {
    let docs: [&[u8]; 6] = [
        b"",
        b"\0A\0B\0C\0D\0E\0",
        b"t\0e\0s\0t\0\0A\0B\0C\0D\0x",
        b"abcd\nefgh\rijkl\x0bmnop\x0c\t\t\t\t",
        b"\x01A\0\x01B\0C\0\0D\0\0",
        b"MZ\x90\0\x03\0\0\0This program cannot be run in DOS mode.\r\r\n$\0",
    ];
    for doc in docs {
        for min_len in 1..=6 {
            for encodings in [
                &[Ascii][..],
                &[Utf16le],
                &[Ascii, Utf16le],
                &[Utf16le, Ascii],
            ] {
                check(
                    doc,
                    &PrintableStrings::new(min_len, encodings, None, None).unwrap(),
                );
            }
        }
    }
}

/// Runs that start, end or continue at the 64-byte block edges of the
/// scanner, at both parities, with and without a trailing odd byte.
#[test]
fn runs_across_block_edges_agree_with_the_oracle() {
    for len in [1, 62, 63, 64, 65, 66, 127, 128, 129, 130, 200] {
        for lead in 0..3 {
            for tail in [&b""[..], b"\0", b"\x01", b"x"] {
                let mut ascii = vec![0x01; lead];
                ascii.extend(std::iter::repeat_n(b'a', len));
                ascii.extend_from_slice(tail);
                let mut wide = vec![0x01; lead];
                wide.extend(std::iter::repeat_n([b'w', 0], len).flatten());
                wide.extend_from_slice(tail);
                for doc in [&ascii, &wide] {
                    for min_len in [1, 4, 63, 64, 65, 128] {
                        for encodings in [&[Ascii][..], &[Utf16le]] {
                            let s = PrintableStrings::new(min_len, encodings, None, None).unwrap();
                            check(doc, &s);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn max_strings_counts_across_encodings() {
    let doc = b"one\0two\0t\0h\0r\0e\0e\0\0four";
    let all = strings(doc, 3, &[Ascii, Utf16le]);
    // The UTF-16 string starts at the 'o' of "two" (as in GNU strings).
    assert_eq!(all, [&b"one"[..], b"two", b"four", b"othree"]);
    for n in 1..=5 {
        let s = PrintableStrings::new(3, &[Ascii, Utf16le], Some(n), None).unwrap();
        assert_eq!(s.strings(doc), all[..n.min(all.len())]);
        check(doc, &s);
    }
}

#[test]
fn max_bytes_truncates_the_crossing_string_and_stops() {
    let doc = b"one\0two\0t\0h\0r\0e\0e\0\0four";
    let s = |n| PrintableStrings::new(3, &[Ascii, Utf16le], None, Some(n)).unwrap();
    assert_eq!(s(1).strings(doc), [b"o"]);
    assert_eq!(s(3).strings(doc), [b"one"]);
    assert_eq!(s(4).strings(doc), [&b"one"[..], b"t"]);
    assert_eq!(s(9).strings(doc), [&b"one"[..], b"two", b"fou"]);
    assert_eq!(s(10).strings(doc), [&b"one"[..], b"two", b"four"]);
    assert_eq!(s(12).strings(doc), [&b"one"[..], b"two", b"four", b"ot"]);
    assert_eq!(s(16).strings(doc).concat(), b"onetwofourothree");
    assert_eq!(s(usize::MAX).strings(doc).len(), 4);
    for n in 1..=17 {
        check(doc, &s(n));
        let both = PrintableStrings::new(3, &[Ascii, Utf16le], Some(2), Some(n)).unwrap();
        check(doc, &both);
        assert!(both.strings(doc).concat().len() <= n);
    }
}

#[test]
fn new_rejects_bad_values_and_says_what_is_allowed() {
    let err = |min_len, enc: &[StringEncoding], ms, mb| {
        let e = PrintableStrings::new(min_len, enc, ms, mb).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        e.message().to_string()
    };
    assert_eq!(
        err(0, &[Ascii], None, None),
        "printable strings min_len must be in 1..=1048576, got 0"
    );
    assert!(err(MAX_MIN_LEN + 1, &[Ascii], None, None).contains("1..=1048576"));
    assert_eq!(
        err(4, &[], None, None),
        "printable strings encodings must name at least one of ascii, utf16le, got none"
    );
    assert!(err(4, &[Utf16le, Ascii, Utf16le], None, None).contains("'utf16le' twice"));
    assert_eq!(
        err(4, &[Ascii], Some(0), None),
        "printable strings max_strings must be at least 1 (or unset for no limit), got 0"
    );
    assert!(err(4, &[Ascii], None, Some(0)).contains("max_bytes must be at least 1"));
    let ok = PrintableStrings::new(MAX_MIN_LEN, &[Utf16le, Ascii], Some(1), Some(1)).unwrap();
    assert_eq!(ok.encodings(), [Utf16le, Ascii]);
    assert_eq!((ok.max_strings(), ok.max_bytes()), (Some(1), Some(1)));
    assert_eq!(StringEncoding::from_name("utf16le").unwrap(), Utf16le);
    assert!(StringEncoding::from_name("utf-16")
        .unwrap_err()
        .message()
        .contains("ascii, utf16le"));
}

#[test]
fn swar_byte_classes_equal_the_table() {
    for b in 0..=255u8 {
        for lane in 0..8 {
            // b in one lane, its neighbours in the others, so a carry would show.
            let x = u64::from_le_bytes([b.wrapping_add(lane as u8); 8]) & !(0xff << (8 * lane))
                | u64::from(b) << (8 * lane);
            let bit = |m: u64| (m >> (8 * lane + 7)) & 1 == 1;
            assert_eq!(
                bit(graphic_bytes(x)),
                is_graphic(b),
                "{b:#x} in lane {lane}"
            );
            assert_eq!(bit(zero_bytes(x)), b == 0, "{b:#x} in lane {lane}");
            assert_eq!(gather_high_bits(1 << (8 * lane + 7)), 1 << lane);
        }
    }
}

#[test]
fn is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PrintableStrings>();
}

/// Bytes that make strings: mostly graphic, with NULs (UTF-16 high bytes),
/// the class edges and anything else.
fn doc_strategy() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => prop::sample::select(b"aZ09 ~\t".to_vec()),
        3 => Just(0u8),
        1 => prop::sample::select(vec![0x01, 0x08, 0x0a, 0x0d, 0x1f, 0x7f, 0x80, 0xa0, 0xff]),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    /// The fast path equals GNU's loop at every alignment (the document is
    /// shifted by 0..4 leading bytes of each kind), for every encoding
    /// order and small min_len.
    #[test]
    fn prop_equals_gnu_loop_at_every_alignment(
        doc in doc_strategy(),
        min_len in 1usize..7,
        pad in prop::sample::select(vec![0u8, b'x', 0xff]),
    ) {
        for shift in 0..4 {
            let mut padded = vec![pad; shift];
            padded.extend_from_slice(&doc);
            for encodings in [&[Ascii][..], &[Utf16le], &[Ascii, Utf16le], &[Utf16le, Ascii]] {
                check(&padded, &PrintableStrings::new(min_len, encodings, None, None).unwrap());
            }
        }
    }

    /// Bounds: the oracle's truncation, never more than the caps.
    #[test]
    fn prop_bounds(
        doc in doc_strategy(),
        min_len in 1usize..5,
        max_strings in prop::option::of(1usize..8),
        max_bytes in prop::option::of(1usize..40),
        utf16_first in any::<bool>(),
    ) {
        let encodings = if utf16_first { [Utf16le, Ascii] } else { [Ascii, Utf16le] };
        let s = PrintableStrings::new(min_len, &encodings, max_strings, max_bytes).unwrap();
        check(&doc, &s);
        let out = s.strings(&doc);
        prop_assert!(out.len() <= max_strings.unwrap_or(usize::MAX));
        prop_assert!(out.concat().len() <= max_bytes.unwrap_or(usize::MAX));
        prop_assert!(out.iter().all(|x| !x.is_empty() && x.iter().all(|&b| is_graphic(b))));
    }
}
