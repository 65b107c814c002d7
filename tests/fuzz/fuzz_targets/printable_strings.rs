//! Fuzz target `printable_strings`: GNU `strings -a` parity with random
//! `min_len`, encodings, `max_strings` and `max_bytes` (valid and invalid).
//!
//! Checks:
//! - `PrintableStrings::new` is `Err(InvalidArgument)` exactly when
//!   `min_len` is outside `1..=MAX_MIN_LEN`, the encodings are empty or
//!   repeat one, or a bound is `Some(0)`; never panics;
//! - `append_strings` (onto buffers that already hold a string) equals
//!   `rustfx::oracles::printable_strings`, the unit tests' transliteration
//!   of binutils' `print_strings` loop (`get_char` of 1 or
//!   2 bytes, every non-graphic character "ungot" to its second byte) run
//!   per encoding, concatenated in the given order, cut at `max_strings`
//!   and truncated at `max_bytes`;
//! - the bounds hold, every string is non-empty and only has tab and
//!   `0x20..=0x7E`, `ends` are increasing row splits, and `strings` agrees.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use rustfx::oracles;
use rustfx::printable_strings::{PrintableStrings, StringEncoding, MAX_MIN_LEN};
use rustfx::ErrorKind;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum MinLen {
    Small(u8),
    Zero,
    Max,
    MaxPlus1,
    Any(u64),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Bound {
    None,
    Zero,
    Small(u8),
    Any(u64),
}

#[derive(Arbitrary, Debug)]
struct Input {
    min_len: MinLen,
    /// true: Utf16le; 0 to 3 entries, so empty and repeated lists occur.
    encodings: Vec<bool>,
    max_strings: Bound,
    max_bytes: Bound,
    data: Vec<u8>,
}

fn bound(b: Bound) -> Option<usize> {
    match b {
        Bound::None => None,
        Bound::Zero => Some(0),
        Bound::Small(x) => Some(usize::from(x)),
        Bound::Any(x) => Some(x as usize),
    }
}

fuzz_target!(|input: Input| {
    let data = &input.data[..];
    let min_len = match input.min_len {
        MinLen::Small(x) => usize::from(x % 16),
        MinLen::Zero => 0,
        MinLen::Max => MAX_MIN_LEN,
        MinLen::MaxPlus1 => MAX_MIN_LEN + 1,
        MinLen::Any(x) => x as usize,
    };
    let encodings: Vec<StringEncoding> = input
        .encodings
        .iter()
        .take(3)
        .map(|&wide| {
            if wide {
                StringEncoding::Utf16le
            } else {
                StringEncoding::Ascii
            }
        })
        .collect();
    let (max_strings, max_bytes) = (bound(input.max_strings), bound(input.max_bytes));

    let distinct = encodings
        .iter()
        .enumerate()
        .all(|(i, e)| !encodings[..i].contains(e));
    let valid = (1..=MAX_MIN_LEN).contains(&min_len)
        && !encodings.is_empty()
        && distinct
        && max_strings != Some(0)
        && max_bytes != Some(0);
    let s = match PrintableStrings::new(min_len, &encodings, max_strings, max_bytes) {
        Ok(s) => {
            assert!(
                valid,
                "accepted {min_len} {encodings:?} {max_strings:?} {max_bytes:?}"
            );
            s
        }
        Err(e) => {
            assert!(!valid, "rejected: {e}");
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(!e.message().is_empty());
            return;
        }
    };

    // The oracle reads the parameters back from `s`: they must be the ones given.
    assert_eq!(
        (s.min_len(), s.encodings(), s.max_strings(), s.max_bytes()),
        (min_len, &encodings[..], max_strings, max_bytes)
    );
    let expected = oracles::printable_strings::printable_strings(data, &s);

    let (mut bytes, mut ends) = (b"before".to_vec(), vec![6u64]);
    s.append_strings(data, &mut bytes, &mut ends);
    assert_eq!(&bytes[..6], b"before");
    assert_eq!(bytes[6..], expected.concat()[..]);
    assert_eq!(ends.len(), expected.len() + 1);
    assert_eq!(*ends.last().unwrap(), bytes.len() as u64);
    for (w, x) in ends.windows(2).zip(&expected) {
        assert!(w[0] < w[1]);
        assert_eq!(w[1] - w[0], x.len() as u64);
    }
    assert!(expected.len() <= max_strings.unwrap_or(usize::MAX));
    assert!(bytes.len() - 6 <= max_bytes.unwrap_or(usize::MAX));
    assert!(bytes[6..]
        .iter()
        .all(|&b| b == 0x09 || (0x20..=0x7e).contains(&b)));
    assert_eq!(s.strings(data), expected);
});
