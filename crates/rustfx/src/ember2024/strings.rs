//! EMBER2024's string features ("thrember", feature version 3, group
//! `strings`, 177 values), written from thrember's definitions.
//!
//! Strings are the maximal runs of at least 5 bytes in `0x20..=0x7F`, as in
//! EMBER 2018. The row, in thrember's order:
//!
//! * `numstrings`, `avlength` (Python's `sum / len`, correctly rounded
//!   float64), `printables` (bytes in strings);
//! * `printabledist`: the count of each byte `0x20..=0x7F` in the strings
//!   divided (float64) by `printables` (by 1 when there are none);
//! * `entropy`: base-2 entropy of those 96 counts. thrember runs under
//!   numpy 2, where `float32_array / int64_scalar` is float64 (NEP 50), so
//!   `p = float32(count) / total` in float64, and the nonzero terms
//!   `-p·log2(p)` are summed with numpy's pairwise summation;
//! * 77 counts, one per pattern in [`PATTERNS`] (sorted by name, thrember's
//!   order): how many strings contain a match (`re.search`), which a
//!   [`RegexSet`] answers for all patterns in one pass over each string.
//!   The patterns and their quirks are thrember's own: `email_addr` is the
//!   MAC-address pattern, `registry_key` looks for `KHEY_`/`KHLM`/`HKCU`,
//!   the `onclick` counter is named `onlick`, and `base64string`, meant as
//!   the base64 alphabet, is a regex in which `9+/` means "one or more 9s,
//!   then /", so the alphabet itself (`...789+/`) does not match it.
//!
//! All as float32. An input without strings gives zeros.

use crate::byte_features::{numpy_sum_f64, put_string_statistics, string_statistics};
use crate::extractor::{fixed_row, RowExtractor};
use crate::{Error, ErrorKind, Result};
use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use std::cell::OnceCell;
use std::sync::OnceLock;

/// Length of an [`Ember2024Strings`] row.
pub const EMBER2024_STRINGS_DIM: usize = 3 + 96 + 1 + PATTERNS.len();

/// thrember's string patterns: (name, pattern, case-insensitive), sorted by
/// name as thrember orders them. Translated from Python's `re` syntax only
/// where the `regex` crate spells it differently (`url`: `[` and `-` in a
/// class are escaped); the strings are ASCII, where both engines agree on
/// `\b`, `\w` and case folding.
pub const PATTERNS: [(&str, &str, bool); 77] = [
    (".click(", r".click", true),
    ("/EmbeddedFile", r"/EmbeddedFile", false),
    ("/FlateDecode", r"/FlateDecode", false),
    ("/URI", r"/URI", false),
    ("/bin/", r"/bin/", false),
    ("/dev/", r"/dev/", false),
    ("/proc/", r"/proc/", false),
    ("/tmp/", r"/tmp/", false),
    ("/usr/", r"/usr/", false),
    ("<script", r"<script", true),
    ("Invoke-Command", r"Invoke-Command", false),
    ("Invoke-Expression", r"Invoke-Expression", false),
    ("Start-process", r"Start-process", false),
    ("base64", r"base64", true),
    (
        "base64string",
        r"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        false,
    ),
    ("btc_wallet", r"[13][a-km-zA-HJ-NP-Z1-9]{25,34}", false),
    ("cache", r"cache", true),
    ("certificate", r"certificate", true),
    ("clipboard", r"clipboard", true),
    ("command", r"command", true),
    ("connect", r"connect", true),
    ("cookie", r"cookie", true),
    ("create", r"create", true),
    ("crypt", r"crypt", false),
    ("debug", r"debug", true),
    ("decode", r"decode", true),
    ("delete", r"delete", true),
    ("desktop", r"desktop", true),
    ("directory", r"directory", true),
    ("disk", r"disk", true),
    ("dos_msg", r"!This program ", false),
    ("download", r"download", true),
    (
        "email_addr",
        r"\b(?:[0-9A-Fa-f]{2}[:-]){5}(?:[0-9A-Fa-f]{2})\b",
        false,
    ),
    ("encode", r"encode", true),
    ("enum", r"enum", true),
    ("environment", r"environment", true),
    ("exit", r"exit", true),
    ("file", r"file", true),
    ("file_path", r"\bC:/", false),
    ("ftp", r"ftp:", true),
    ("get", r"GET /", true),
    ("hidden", r"hidden", true),
    ("hostname", r"hostname", true),
    ("html", r"html", true),
    ("http", r"HTTP/", true),
    ("http://", r"http://", true),
    ("https://", r"https://", true),
    ("install", r"install", true),
    ("internet", r"internet", true),
    (
        "ipv4_addr",
        r"\b(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\b",
        false,
    ),
    (
        "ipv6_addr",
        r"\b(?:[A-Fa-f0-9]{1,4}:){7}[A-Fa-f0-9]{1,4}\b|\b(?:[A-Fa-f0-9]{1,4}:){1,7}:\b|\b:[A-Fa-f0-9]{1,4}(?::[A-Fa-f0-9]{1,4}){1,6}\b",
        false,
    ),
    ("javascript", r"javascript", true),
    ("keyboard", r"keyboard", true),
    (
        "mac_addr",
        r"\b(?:[0-9A-Fa-f]{2}[:-]){5}(?:[0-9A-Fa-f]{2})\b",
        false,
    ),
    ("memory", r"memory", true),
    ("module", r"module", true),
    ("mutex", r"mutex", true),
    ("onlick", r"onclick", true),
    ("password", r"password", true),
    ("post", r"POST /", true),
    ("powershell", r"powershell", true),
    ("privilege", r"privilege", true),
    ("process", r"process", true),
    ("registry_key", r"\b(?:KHEY_|KHLM|HKCU)", false),
    ("remote", r"remote", true),
    ("resource", r"resource", true),
    ("security", r"security", true),
    ("service", r"service", true),
    ("shell", r"shell", true),
    ("snapshot", r"snapshot", true),
    ("system", r"system", true),
    ("thread", r"thread", true),
    ("token", r"token", true),
    (
        "url",
        r"\b(?:http|https|ftp)://[a-zA-Z0-9\-._~:?#\[\]@!$&'()*+,;=]+",
        false,
    ),
    ("useragent", r"User-Agent", true),
    ("wallet", r"wallet", true),
    ("window", r"window", true),
];

/// The lazy DFA's cache, per thread that runs the patterns. Matching all 77
/// patterns at once (overlapping search) needs about 10 MiB of DFA states
/// on real files; at the regex crate's default of 2 MiB the cache is
/// cleared and rebuilt again and again, and building states took two
/// thirds of the time (`perf`). 32 MiB lets it settle: 3.2x faster on 40
/// binaries of /usr/bin (156 MB), for ~10 MiB more per thread.
const LAZY_DFA_CACHE_BYTES: usize = 32 << 20;

/// The `ember2024_string_features` extractor (no parameters). Building it
/// compiles the 77 patterns once.
#[derive(Clone, Debug)]
pub struct Ember2024Strings {
    patterns: RegexSet,
}

impl Ember2024Strings {
    /// Compiles the patterns (an `Internal` error could only be a bug in
    /// [`PATTERNS`]).
    pub fn new() -> Result<Self> {
        let patterns = RegexSetBuilder::new(pattern_sources())
            // The strings are ASCII (bytes 0x20..=0x7F), where Unicode and
            // ASCII `\w`, `\b`, `\d` and case folding agree (Python's Kelvin
            // sign and long s fold only from non-ASCII text), and the ASCII
            // automaton is smaller.
            .unicode(false)
            .dfa_size_limit(LAZY_DFA_CACHE_BYTES)
            .build()
            .map_err(|e| Error::new(ErrorKind::Internal, format!("string patterns: {e}")))?;
        Ok(Ember2024Strings { patterns })
    }

    /// The patterns `string` matches (indices into [`PATTERNS`]), by
    /// extraction's own set: what the explanation counts.
    pub(super) fn matching_patterns(&self, string: &[u8]) -> regex::bytes::SetMatches {
        self.patterns.matches(string)
    }
}

/// The patterns as the set compiles them: case-insensitive ones wrapped.
fn pattern_sources() -> impl Iterator<Item = String> {
    PATTERNS.iter().map(|&(_, pattern, ignore_case)| {
        if ignore_case {
            format!("(?i:{pattern})")
        } else {
            pattern.to_string()
        }
    })
}

/// Each pattern alone, for the explanation: a set says which patterns
/// match a string, not where. Compiled on first use (extraction never
/// needs them); `regex` finds the leftmost match, as Python's `re.search`.
pub(super) fn pattern_regexes() -> Result<&'static [Regex]> {
    static REGEXES: OnceLock<std::result::Result<Vec<Regex>, String>> = OnceLock::new();
    REGEXES
        .get_or_init(|| {
            pattern_sources()
                .map(|source| {
                    RegexBuilder::new(&source)
                        .unicode(false)
                        .build()
                        .map_err(|e| e.to_string())
                })
                .collect()
        })
        .as_deref()
        .map_err(|e| Error::new(ErrorKind::Internal, format!("string patterns: {e}")))
}

impl RowExtractor for Ember2024Strings {
    type Value = f32;

    fn width(&self) -> usize {
        EMBER2024_STRINGS_DIM
    }

    fn write_row(&self, doc: &[u8], out: &mut [f32]) -> Result<()> {
        let row: &mut [f32; EMBER2024_STRINGS_DIM] = fixed_row(out)?;
        // EMBER's string scan (the same strings) gives the statistics and
        // hands each string to the patterns.
        let mut matches = [0u64; 77];
        let mut scan = |set: &RegexSet| {
            string_statistics(doc, |string| {
                let found = set.matches(string);
                // Most strings match nothing: skip walking all 77 slots.
                if found.matched_any() {
                    for k in found.iter() {
                        matches[k] += 1;
                    }
                }
            })
        };
        // During thread exit there is no thread copy: the shared set.
        let (numstrings, printables, dist) = match THREAD_PATTERNS
            .try_with(|cell| scan(cell.get_or_init(|| self.patterns.clone())))
        {
            Ok(statistics) => statistics,
            Err(_) => scan(&self.patterns),
        };
        let entropy = numpy2_entropy(&dist, printables);
        let mut slots = row.iter_mut();
        let mut put = |value: f64| {
            if let Some(slot) = slots.next() {
                *slot = value as f32;
            }
        };
        put_string_statistics(numstrings, printables, &dist, entropy, &mut put);
        for &count in &matches {
            put(count as f64);
        }
        Ok(())
    }
}

thread_local! {
    /// This thread's copy of the pattern set (a clone shares the compiled
    /// automata, not the search caches). regex hands its search caches out
    /// from a pool that serves the first thread to use a set from a fast
    /// slot and every other thread through a shared stack; with one copy
    /// per thread, each thread is its copy's first. Measured on 2 threads
    /// (`benches/extractors.py --files 600 --only ember`): 1.65x -> 1.99x
    /// of one thread. The patterns are constants, so every extractor of
    /// the thread can share the copy.
    static THREAD_PATTERNS: OnceCell<RegexSet> = const { OnceCell::new() };
}

/// thrember's entropy of the 96 counts under numpy 2 (see the module docs).
pub(super) fn numpy2_entropy(counts: &[u64; 96], total: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let total = total as f64;
    let mut terms = [0f64; 96];
    let mut n = 0;
    for (t, &c) in terms.iter_mut().zip(counts.iter().filter(|&&c| c != 0)) {
        let p = f64::from(c as f32) / total;
        *t = -p * p.log2();
        n += 1;
    }
    numpy_sum_f64(terms.get(..n).unwrap_or(&[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_compile_and_are_sorted_by_name() {
        let extractor = Ember2024Strings::new().unwrap();
        assert_eq!(extractor.width(), 177);
        let names: Vec<&str> = PATTERNS.iter().map(|p| p.0).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }

    #[test]
    fn counts_strings_that_match() {
        let e = Ember2024Strings::new().unwrap();
        let row = e.row(b"\x00see http://a.b/c?d=1 now\x00HKCU\\x HKCU\x00short\x01tiny");
        let at = |name: &str| {
            let k = PATTERNS.iter().position(|p| p.0 == name).unwrap();
            row[100 + k]
        };
        assert_eq!(row[0], 3.0); // three strings of >= 5 bytes
        assert_eq!(at("url"), 1.0);
        assert_eq!(at("http://"), 1.0);
        assert_eq!(at("registry_key"), 1.0); // once per string, not per match
        assert_eq!(at("html"), 0.0);
        assert!(e.row(b"").iter().all(|&v| v == 0.0));
        assert!(e.row(b"\x01\x02abc\x03").iter().all(|&v| v == 0.0));
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_counts_are_bounded(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..800),
        ) {
            let e = Ember2024Strings::new().unwrap();
            let row = e.row(&data);
            let numstrings = row[0];
            proptest::prop_assert!(row[100..].iter().all(|&c| c <= numstrings));
            proptest::prop_assert!((0.0..=7.0).contains(&row[99]), "entropy {}", row[99]);
        }
    }
}
