//! `ember2024_string_features`' explanation, also `ember_features`'
//! `strings` group.

use super::counts_of;
use crate::byte_features::put_string_statistics;
use crate::ember2024::strings::{
    numpy2_entropy, pattern_regexes, Ember2024Strings, EMBER2024_STRINGS_DIM, PATTERNS,
};
use crate::explain::sums_from;
use crate::explain::{
    float32_row, Contribution, Contributions, Explain, ExplainOptions, Explanation,
};
use crate::Result;

/// The row: numstrings, avlength, printables, 96 printable counts,
/// entropy, then the pattern counters.
const NUMSTRINGS: u64 = 0;
const AVLENGTH: u64 = 1;
const PRINTABLES: u64 = 2;
const PRINTABLEDIST: u64 = 3;
const ENTROPY: u64 = 99;
const PATTERN_COUNTS: u64 = 100;

/// Strings are runs of at least this many bytes in `0x20..=0x7F`.
const MIN_STRING: usize = 5;

/// What the contributions of the string values mean.
pub(super) const STRINGS_COMBINE: &str = "per string (its span and text): numstrings 1, \
     avlength and printables its length, printabledist_c the count of byte c in it (text: c), \
     pattern_p 1 at its first match of p (text: the match); entropy one value over the strings' \
     extent; avlength = its sum / numstrings, printabledist = count / printables: extraction's \
     own finishing";

impl Explain for Ember2024Strings {
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let mut out = Contributions::new(options);
        explain_strings(self, doc, 0, &mut out)?;
        Ok(Explanation::new(
            out,
            STRINGS_COMBINE,
            Box::new(|contributions: &[Contribution]| {
                let mut row = vec![0f32; EMBER2024_STRINGS_DIM];
                assemble_strings(contributions, 0, &mut row)?;
                Ok(float32_row(row))
            }),
        ))
    }
}

/// Calls `visit(offset, string)` for each string of `doc` in order (maximal
/// runs, found byte by byte: not extraction's 64-byte masks), until
/// `visit` returns `false`; then returns `false`.
fn visit_strings(doc: &[u8], mut visit: impl FnMut(usize, &[u8]) -> bool) -> bool {
    let mut start = None;
    // One step past the end closes the last run.
    for end in 0..=doc.len() {
        let printable = doc.get(end).is_some_and(|b| (0x20..=0x7F).contains(b));
        match (printable, start) {
            (true, None) => start = Some(end),
            (false, Some(from)) => {
                start = None;
                if end - from >= MIN_STRING {
                    if let Some(string) = doc.get(from..end) {
                        if !visit(from, string) {
                            return false;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    true
}

/// Pushes the contributions of `doc`'s strings, their indices offset by
/// `base`. `Ok(false)` once the cap stopped it.
pub(super) fn explain_strings(
    extractor: &Ember2024Strings,
    doc: &[u8],
    base: u64,
    out: &mut Contributions,
) -> Result<bool> {
    let regexes = pattern_regexes()?;
    // The entropy's inputs and span: all strings' characters.
    let (mut dist, mut printables, mut extent) = ([0u64; 96], 0u64, None::<(u64, u64)>);
    let finished = visit_strings(doc, |from, string| {
        let (offset, length) = (from as u64, string.len() as u64);
        let mut push = |index: u64, value: f64, text: &[u8]| {
            out.push(base + index, offset, length, value, text)
        };
        let len = string.len() as f64;
        if !push(NUMSTRINGS, 1.0, string)
            || !push(AVLENGTH, len, string)
            || !push(PRINTABLES, len, string)
        {
            return false;
        }
        printables += length;
        extent = Some((extent.map_or(offset, |(start, _)| start), offset + length));
        let mut counts = [0u64; 96];
        for &b in string {
            if let Some(count) = counts.get_mut(usize::from(b).wrapping_sub(0x20)) {
                *count += 1;
            }
        }
        for (total, &count) in dist.iter_mut().zip(&counts) {
            *total += count;
        }
        for ((&count, k), c) in counts.iter().zip(0u64..).zip(0x20u8..) {
            if count > 0 && !push(PRINTABLEDIST + k, count as f64, &[c]) {
                return false;
            }
        }
        // Which patterns count is extraction's set's answer; where the
        // match is, the pattern's own regex (the whole string should the
        // two ever disagree).
        for k in extractor.matching_patterns(string).iter() {
            let found = regexes.get(k).and_then(|regex| regex.find(string));
            let (at, len, text) = found.map_or((0, string.len(), string), |m| {
                (m.start(), m.len(), m.as_bytes())
            });
            let index = base + PATTERN_COUNTS + k as u64;
            if !out.push(index, offset + at as u64, len as u64, 1.0, text) {
                return false;
            }
        }
        true
    });
    // No strings: no entropy (extraction's is 0).
    Ok(finished
        && extent.is_none_or(|(start, end)| {
            let entropy = numpy2_entropy(&dist, printables);
            out.push(base + ENTROPY, start, end - start, entropy, &[])
        }))
}

/// The string values of `row` (177, from output index `base`), finished by
/// extraction's own functions.
pub(super) fn assemble_strings(
    contributions: &[Contribution],
    base: u64,
    row: &mut [f32],
) -> Result<()> {
    let sums = sums_from(contributions, base, EMBER2024_STRINGS_DIM)?;
    let at = |index: u64| sums.get(index as usize).copied().unwrap_or(0.0);
    let numstrings = at(NUMSTRINGS) as u64;
    let printables = at(PRINTABLES) as u64;
    let dist: [u64; 96] = counts_of(sums.get(PRINTABLEDIST as usize..).unwrap_or(&[]));
    // Each string's length went to both: they differ only by a bug.
    if at(AVLENGTH) != at(PRINTABLES) {
        return Err(crate::Error::new(
            crate::ErrorKind::Internal,
            "avlength's lengths differ from printables' (a bug in rustfx)",
        ));
    }
    // The explainer's entropy (its own counts, extraction's function),
    // checked against extraction by reassembly.
    let entropy = at(ENTROPY);
    let mut slots = row.iter_mut();
    let mut put = |value: f64| {
        if let Some(slot) = slots.next() {
            *slot = value as f32;
        }
    };
    put_string_statistics(numstrings, printables, &dist, entropy, &mut put);
    for k in 0..PATTERNS.len() as u64 {
        put(at(PATTERN_COUNTS + k));
    }
    Ok(())
}
