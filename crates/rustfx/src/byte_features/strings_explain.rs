//! Explanations of EMBER's string features (104 values).
//!
//! The walk is the definition, one byte at a time (runs of at least 5 bytes
//! in `0x20..=0x7F`, then each pattern tried at every offset), not
//! extraction's 64-byte masks and `memchr` passes, so the exactness test
//! compares two implementations. The finishing is the extractor's own:
//! [`put_string_statistics`] (its float64 divisions) and [`mean_length`].
//!
//! Per dimension:
//! * `numstrings` (0), `avlength` (1), `printables` (2): one contribution
//!   per string (its span and text), value 1, its length, its length;
//!   `avlength` = the sum at 1 / the sum at 0.
//! * `printabledist` (3 + byte - 0x20): per string and byte value in it, the
//!   count of that byte in the string (span: the string); divided by the sum
//!   at 2.
//! * `entropy` (99): one contribution carrying the value, the extractor's
//!   numpy entropy of the explainer's own byte counts, spanning the first
//!   string's start to the last one's end.
//! * `paths` (100), `urls` (101), `registry` (102), `MZ` (103): one
//!   contribution per match over the whole input, value 1, the matched bytes.

use super::numpy::numpy1_entropy;
use super::strings::{mean_length, StringFeatures};
use super::{put_string_statistics, STRING_FEATURES_DIM};
use crate::explain::{
    float32_row, sums_by_index, Contribution, Contributions, Explain, ExplainOptions, Explanation,
};
use crate::Result;

const NUMSTRINGS: usize = 0;
const AVLENGTH: usize = 1;
const PRINTABLES: usize = 2;
/// The first of the 96 `printabledist` bins (byte `0x20`).
const DIST: usize = 3;
const ENTROPY: usize = 99;
const PATHS: u64 = 100;
const URLS: u64 = 101;
const REGISTRY: u64 = 102;
const MZ: u64 = 103;

/// EMBER's printable byte: `[\x20-\x7f]`.
fn printable(b: u8) -> bool {
    (0x20..=0x7f).contains(&b)
}

/// The strings of `data`: (start, end) of each maximal run of at least 5
/// printable bytes, in order; stops when `f` returns false.
fn for_each_string(data: &[u8], mut f: impl FnMut(usize, usize) -> bool) -> bool {
    let mut start = None;
    // One step past the end closes a run that reaches it.
    for i in 0..=data.len() {
        let inside = data.get(i).is_some_and(|&b| printable(b));
        match (start, inside) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                start = None;
                if i - s >= 5 && !f(s, i) {
                    return false;
                }
            }
            _ => {}
        }
    }
    true
}

/// The pattern that starts at `rest`, if any: its index and length. At most
/// one can start at an offset (their first bytes differ), and none can
/// overlap itself, so trying every offset finds regex `findall`'s matches.
fn pattern_at(rest: &[u8]) -> Option<(u64, usize)> {
    let starts = |p: &[u8]| {
        rest.get(..p.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(p))
    };
    if starts(b"c:\\") {
        Some((PATHS, 3))
    } else if starts(b"https://") {
        Some((URLS, 8))
    } else if starts(b"http://") {
        Some((URLS, 7))
    } else if rest.starts_with(b"HKEY_") {
        Some((REGISTRY, 5))
    } else if rest.starts_with(b"MZ") {
        Some((MZ, 2))
    } else {
        None
    }
}

/// Pushes the string contributions (indices 0..=99); false at the cap.
fn push_strings(data: &[u8], out: &mut Contributions) -> bool {
    let mut dist = [0u64; 96];
    let (mut printables, mut first, mut last) = (0u64, 0usize, 0usize);
    let go_on = for_each_string(data, |start, end| {
        let Some(s) = data.get(start..end) else {
            return false;
        };
        let (offset, length) = (start as u64, s.len() as u64);
        let mut counts = [0u64; 96];
        for &b in s {
            if let Some(c) = usize::from(b)
                .checked_sub(0x20)
                .and_then(|k| counts.get_mut(k))
            {
                *c += 1;
            }
        }
        let head = [
            (NUMSTRINGS, 1.0),
            (AVLENGTH, s.len() as f64),
            (PRINTABLES, s.len() as f64),
        ];
        for (index, value) in head {
            if !out.push(index as u64, offset, length, value, s) {
                return false;
            }
        }
        for (k, &count) in counts.iter().enumerate() {
            if count > 0 && !out.push((DIST + k) as u64, offset, length, count as f64, &[]) {
                return false;
            }
        }
        for (d, c) in dist.iter_mut().zip(counts) {
            *d += c;
        }
        if printables == 0 {
            first = start;
        }
        printables += length;
        last = end;
        true
    });
    if !go_on {
        return false;
    }
    // No strings: entropy 0, no contribution.
    printables == 0
        || out.push(
            ENTROPY as u64,
            first as u64,
            (last - first) as u64,
            numpy1_entropy(&dist, printables),
            &[],
        )
}

impl Explain for StringFeatures {
    /// See the module docs for what each dimension's contributions are.
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let mut out = Contributions::new(options);
        if push_strings(doc, &mut out) {
            for i in 0..doc.len() {
                let rest = doc.get(i..).unwrap_or(&[]);
                if let Some((index, len)) = pattern_at(rest) {
                    let matched = rest.get(..len).unwrap_or(&[]);
                    if !out.push(index, i as u64, len as u64, 1.0, matched) {
                        break;
                    }
                }
            }
        }
        Ok(Explanation::new(
            out,
            "counts and lengths summed per index; avlength = sum at 1 / sum at 0, \
             printabledist = its counts / sum at 2, entropy = its one value",
            Box::new(assemble),
        ))
    }
}

/// The row from the summed contributions, finished as the extractor does.
fn assemble(contributions: &[Contribution]) -> Result<crate::output::Batch> {
    let sums = sums_by_index(contributions, STRING_FEATURES_DIM)?;
    // Counts and lengths are integers: their f64 sums are exact below 2^53.
    let count = |i: usize| sums.get(i).map_or(0, |&s| s as u64);
    let numstrings = count(NUMSTRINGS);
    let mut dist = [0u64; 96];
    for (k, d) in dist.iter_mut().enumerate() {
        *d = count(DIST + k);
    }
    let mut row = vec![0f32; STRING_FEATURES_DIM];
    let mut slots = row.iter_mut();
    let mut put = |value: f64| {
        if let Some(slot) = slots.next() {
            *slot = value as f32;
        }
    };
    let entropy = sums.get(ENTROPY).copied().unwrap_or(0.0);
    put_string_statistics(numstrings, count(PRINTABLES), &dist, entropy, &mut put);
    for &pattern in sums.get(ENTROPY + 1..).unwrap_or(&[]) {
        put(pattern);
    }
    // avlength from its own contributions (put_string_statistics divides
    // printables, which is the same sum).
    if let Some(slot) = row.get_mut(AVLENGTH) {
        *slot = mean_length(count(AVLENGTH), numstrings) as f32;
    }
    Ok(float32_row(row))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(e: &Explanation, index: u64) -> Vec<(u64, u64, f64, &[u8])> {
        e.contributions
            .iter()
            .filter(|c| c.index == index)
            .map(|c| (c.offset, c.length, c.value, &c.text[..]))
            .collect()
    }

    fn reassembled(doc: &[u8], options: &ExplainOptions) -> Vec<f32> {
        let e = StringFeatures.explain(doc, options).unwrap();
        let rows = e.reassemble().unwrap().into_dense::<f32>();
        rows.expect("float32 rows").values
    }

    fn extracted(doc: &[u8]) -> Vec<f32> {
        let mut row = [0f32; STRING_FEATURES_DIM];
        super::super::string_features(doc, super::super::EmptyInput::Zeros, &mut row);
        row.to_vec()
    }

    #[test]
    fn strings_and_patterns() {
        let doc = b"ab\0Hello World\x01C:\\x http://a HTTPS://b HKEY_ MZ\x7f\x80MZ";
        let e = StringFeatures
            .explain(doc, &ExplainOptions::default())
            .unwrap();
        let strings = &b"C:\\x http://a HTTPS://b HKEY_ MZ\x7f"[..];
        assert_eq!(
            at(&e, 0),
            [(3, 11, 1.0, &b"Hello World"[..]), (15, 33, 1.0, strings)]
        );
        assert_eq!(at(&e, 2)[1], (15, 33, 33.0, strings));
        // 'l' three times in "Hello World".
        assert_eq!(at(&e, (DIST + 0x4c) as u64)[0], (3, 11, 3.0, &b""[..]));
        let entropy = at(&e, ENTROPY as u64);
        assert_eq!((entropy.len(), entropy[0].0, entropy[0].1), (1, 3, 45));
        assert_eq!(at(&e, PATHS), [(15, 3, 1.0, &b"C:\\"[..])]);
        assert_eq!(
            at(&e, URLS),
            [
                (20, 7, 1.0, &b"http://"[..]),
                (29, 8, 1.0, &b"HTTPS://"[..])
            ]
        );
        assert_eq!(at(&e, REGISTRY), [(39, 5, 1.0, &b"HKEY_"[..])]);
        assert_eq!(at(&e, MZ).len(), 2);
        assert_eq!(reassembled(doc, &ExplainOptions::default()), extracted(doc));
    }

    #[test]
    fn float64_entropy_of_many_printables() {
        // Over 65536 string bytes: numpy 1.x computes the entropy in float64.
        let mut x = 7u64;
        let doc: Vec<u8> = (0..300_000)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let r = (x >> 33) as u8;
                if r.is_multiple_of(13) {
                    r
                } else {
                    0x20 + r % 0x60
                }
            })
            .collect();
        let options = ExplainOptions::new(crate::explain::MAX_CONTRIBUTIONS, 16, false).unwrap();
        let e = StringFeatures.explain(&doc, &options).unwrap();
        assert!(at(&e, 2).iter().map(|c| c.2).sum::<f64>() > 65536.0);
        assert_eq!(reassembled(&doc, &options), extracted(&doc));
    }

    #[test]
    fn the_cap_stops_it() {
        let doc = b"Hello World, C:\\ MZ MZ".repeat(10);
        let options = ExplainOptions::new(7, 4, false).unwrap();
        let e = StringFeatures.explain(&doc, &options).unwrap();
        assert!(e.truncated && e.contributions.len() == 7);
        assert!(e.reassemble().is_err());
    }
}
