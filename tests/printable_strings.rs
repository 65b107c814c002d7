//! `rustfx::printable_strings` and its explanations against GNU binutils
//! `strings`: the strings are those `strings -a` prints, and each
//! explanation's (offset, text) is the (offset, string) `strings -a -t d`
//! prints, in GNU's order.
//!
//! * golden vectors (`tests/golden/strings.tsv` and
//!   `tests/golden/strings_offsets.tsv`, made by
//!   `tests/golden/generate_strings.py` with binutils 2.40 from committed
//!   inputs), for `min_len` 1, 4, 8 and both encodings;
//! * a live comparison with the system `strings -t d` on the same inputs, on
//!   random bytes and on a few of this machine's binaries, which is skipped
//!   (with a message, and passes) when `strings` is not installed.

use rustfx::explain::{Explain, ExplainOptions, Explanation, MAX_CONTRIBUTIONS, MAX_TEXT_BYTES};
use rustfx::printable_strings::{PrintableStrings, StringEncoding};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

struct Golden {
    input: String,
    encoding: StringEncoding,
    min_len: usize,
    strings: Vec<Vec<u8>>,
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn golden() -> Vec<Golden> {
    let path = root().join("tests/golden/strings.tsv");
    let text = std::fs::read_to_string(&path).expect("tests/golden/strings.tsv");
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 5, "{line:.100}");
            let count: usize = fields[3].parse().unwrap();
            let strings: Vec<Vec<u8>> = fields[4].split_whitespace().map(unhex).collect();
            assert_eq!(strings.len(), count, "{line:.100}");
            Golden {
                input: fields[0].to_string(),
                encoding: StringEncoding::from_name(fields[1]).unwrap(),
                min_len: fields[2].parse().unwrap(),
                strings,
            }
        })
        .collect()
}

fn extract(doc: &[u8], min_len: usize, encodings: &[StringEncoding]) -> Vec<Vec<u8>> {
    PrintableStrings::new(min_len, encodings, None, None)
        .unwrap()
        .strings(doc)
}

#[test]
fn golden_vectors_from_gnu_strings() {
    let rows = golden();
    assert!(rows.len() >= 90, "{} rows", rows.len());
    let mut total = 0;
    for row in &rows {
        let doc = std::fs::read(root().join(&row.input)).expect(&row.input);
        let got = extract(&doc, row.min_len, &[row.encoding]);
        assert_eq!(
            got.len(),
            row.strings.len(),
            "{} {:?} -n {}",
            row.input,
            row.encoding,
            row.min_len
        );
        for (i, (g, e)) in got.iter().zip(&row.strings).enumerate() {
            assert_eq!(
                g,
                e,
                "{} {:?} -n {}: string {i}: {:?} vs GNU {:?}",
                row.input,
                row.encoding,
                row.min_len,
                String::from_utf8_lossy(g),
                String::from_utf8_lossy(e)
            );
        }
        total += got.len();
    }
    // Several encodings: the rows of each encoding, concatenated in order.
    for ascii in rows.iter().filter(|r| r.encoding == StringEncoding::Ascii) {
        let wide = rows
            .iter()
            .find(|r| {
                r.input == ascii.input
                    && r.min_len == ascii.min_len
                    && r.encoding == StringEncoding::Utf16le
            })
            .expect("both encodings");
        let doc = std::fs::read(root().join(&ascii.input)).unwrap();
        let both = [StringEncoding::Utf16le, StringEncoding::Ascii];
        assert_eq!(
            extract(&doc, ascii.min_len, &both),
            [wide.strings.clone(), ascii.strings.clone()].concat()
        );
    }
    assert!(total > 10_000, "only {total} golden strings");
}

/// Whole texts, no practical cap.
fn whole() -> ExplainOptions {
    ExplainOptions::new(MAX_CONTRIBUTIONS, MAX_TEXT_BYTES, false).unwrap()
}

fn explain(doc: &[u8], min_len: usize, encodings: &[StringEncoding]) -> Explanation {
    let s = PrintableStrings::new(min_len, encodings, None, None).unwrap();
    let explanation = s.explain(doc, &whole()).unwrap();
    assert!(!explanation.truncated);
    explanation
}

fn width(encoding: StringEncoding) -> usize {
    match encoding {
        StringEncoding::Ascii => 1,
        StringEncoding::Utf16le => 2,
    }
}

/// Each contribution's span holds its text (the low bytes, for utf16le),
/// and the texts are extraction's strings.
fn check_spans(doc: &[u8], min_len: usize, encoding: StringEncoding, e: &Explanation, what: &str) {
    let w = width(encoding);
    let extracted = PrintableStrings::new(min_len, &[encoding], None, None)
        .unwrap()
        .strings(doc);
    assert_eq!(e.contributions.len(), extracted.len(), "{what}");
    for (i, (c, s)) in e.contributions.iter().zip(&extracted).enumerate() {
        assert_eq!((c.index, c.value), (i as u64, 1.0), "{what}");
        assert_eq!(&c.text, s, "{what}: string {i}");
        let span = &doc[c.offset as usize..(c.offset + c.length) as usize];
        assert_eq!(span.len(), c.text.len() * w, "{what}: string {i}");
        let low: Vec<u8> = span.iter().step_by(w).copied().collect();
        assert_eq!(low, c.text, "{what}: string {i} at {}", c.offset);
    }
}

struct GoldenOffsets {
    input: String,
    encoding: StringEncoding,
    min_len: usize,
    offsets: Vec<u64>,
}

fn golden_offsets() -> Vec<GoldenOffsets> {
    let path = root().join("tests/golden/strings_offsets.tsv");
    let text = std::fs::read_to_string(path).expect("tests/golden/strings_offsets.tsv");
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 5, "{line:.100}");
            let offsets: Vec<u64> = fields[4]
                .split_whitespace()
                .map(|o| o.parse().unwrap())
                .collect();
            assert_eq!(offsets.len(), fields[3].parse::<usize>().unwrap());
            GoldenOffsets {
                input: fields[0].to_string(),
                encoding: StringEncoding::from_name(fields[1]).unwrap(),
                min_len: fields[2].parse().unwrap(),
                offsets,
            }
        })
        .collect()
}

#[test]
fn offsets_are_those_of_gnu_strings() {
    let rows = golden_offsets();
    assert!(rows.len() >= 80, "{} rows", rows.len());
    let mut total = 0;
    for row in &rows {
        let what = format!("{} {:?} -n {}", row.input, row.encoding, row.min_len);
        let doc = std::fs::read(root().join(&row.input)).expect(&row.input);
        let e = explain(&doc, row.min_len, &[row.encoding]);
        let offsets: Vec<u64> = e.contributions.iter().map(|c| c.offset).collect();
        assert_eq!(offsets, row.offsets, "{what}");
        check_spans(&doc, row.min_len, row.encoding, &e, &what);
        total += offsets.len();
    }
    assert!(total > 5_000, "only {total} golden offsets");
}

#[test]
fn several_encodings_follow_their_order() {
    let rows = golden_offsets();
    for ascii in rows.iter().filter(|r| r.encoding == StringEncoding::Ascii) {
        let wide = rows
            .iter()
            .find(|r| {
                r.input == ascii.input
                    && r.min_len == ascii.min_len
                    && r.encoding == StringEncoding::Utf16le
            })
            .expect("both encodings");
        let doc = std::fs::read(root().join(&ascii.input)).unwrap();
        let both = [StringEncoding::Utf16le, StringEncoding::Ascii];
        let e = explain(&doc, ascii.min_len, &both);
        let offsets: Vec<u64> = e.contributions.iter().map(|c| c.offset).collect();
        assert_eq!(
            offsets,
            [wide.offsets.clone(), ascii.offsets.clone()].concat()
        );
        let indices: Vec<u64> = e.contributions.iter().map(|c| c.index).collect();
        assert!(indices.iter().enumerate().all(|(i, &x)| x == i as u64));
    }
}

/// GNU `strings -a -t d -n min_len -e e path` as (offset, string) pairs;
/// None when the tool cannot be run.
fn gnu_offsets(path: &Path, min_len: usize, e: &str) -> Option<Vec<(u64, Vec<u8>)>> {
    let out = Command::new("strings")
        .args(["-a", "-t", "d", "-n", &min_len.to_string(), "-e", e])
        .arg(path)
        .output()
        .ok()?;
    assert!(out.status.success(), "strings failed on {}", path.display());
    let stdout = out.stdout;
    if stdout.is_empty() {
        return Some(Vec::new());
    }
    assert_eq!(stdout.last(), Some(&b'\n'));
    let pairs = stdout[..stdout.len() - 1]
        .split(|&b| b == b'\n')
        .map(|line| {
            // "%7d %s": the offset right-aligned, one space, the string.
            let line = &line[line.iter().position(|&b| b != b' ').unwrap()..];
            let space = line.iter().position(|&b| b == b' ').unwrap();
            let offset = std::str::from_utf8(&line[..space])
                .unwrap()
                .parse()
                .unwrap();
            (offset, line[space + 1..].to_vec())
        })
        .collect();
    Some(pairs)
}

fn compare_live(path: &Path, min_lens: &[usize]) -> usize {
    let doc = std::fs::read(path).unwrap();
    let mut n = 0;
    for &min_len in min_lens {
        for (encoding, e) in [(StringEncoding::Ascii, "s"), (StringEncoding::Utf16le, "l")] {
            let expected = gnu_offsets(path, min_len, e).expect("strings ran before");
            let what = format!("{} -n {min_len} -e {e}", path.display());
            let strings: Vec<Vec<u8>> = expected.iter().map(|(_, s)| s.clone()).collect();
            let got = extract(&doc, min_len, &[encoding]);
            assert!(
                got == strings,
                "{what}: {} strings vs GNU {} (first difference at {:?})",
                got.len(),
                strings.len(),
                got.iter().zip(&strings).position(|(g, x)| g != x)
            );
            let explained = explain(&doc, min_len, &[encoding]);
            let pairs: Vec<(u64, Vec<u8>)> = explained
                .contributions
                .iter()
                .map(|c| (c.offset, c.text.clone()))
                .collect();
            assert!(
                pairs == expected,
                "{what}: explanation's (offset, string) differ from GNU's at {:?}",
                pairs.iter().zip(&expected).position(|(g, x)| g != x)
            );
            check_spans(&doc, min_len, encoding, &explained, &what);
            n += got.len();
        }
    }
    n
}

/// xorshift64*, so the random inputs need no dependency.
fn random_doc(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    let pool = b"aZ09 ~\t\0\0\0\x01\n\x7f\x80\xff";
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
            if r.is_multiple_of(4) {
                (r >> 8) as u8
            } else {
                pool[(r >> 8) as usize % pool.len()]
            }
        })
        .collect()
}

#[test]
fn live_against_the_system_strings() {
    match Command::new("strings").arg("--version").output() {
        Ok(out) if out.status.success() => {
            let version = String::from_utf8_lossy(&out.stdout);
            eprintln!("comparing with {}", version.lines().next().unwrap_or("?"));
        }
        _ => {
            eprintln!("SKIPPED: GNU `strings` is not installed (apt-get install binutils)");
            return;
        }
    }
    let mut total = 0;
    let mut inputs: Vec<String> = golden().into_iter().map(|g| g.input).collect();
    inputs.dedup();
    for input in &inputs {
        total += compare_live(&root().join(input), &[1, 2, 3, 5, 16]);
    }
    let dir = std::env::temp_dir().join(format!("rustfx-strings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (seed, len) in [
        (1, 0),
        (2, 1),
        (3, 2),
        (4, 3),
        (5, 1000),
        (6, 1001),
        (7, 65537),
    ] {
        let path = dir.join(format!("random-{seed}"));
        std::fs::write(&path, random_doc(seed, len)).unwrap();
        total += compare_live(&path, &[1, 2, 4, 7]);
    }
    std::fs::remove_dir_all(&dir).ok();
    for machine in ["/bin/ls", "/bin/sh", "/usr/bin/strings", "/usr/bin/env"] {
        let path = Path::new(machine);
        if path.is_file() {
            total += compare_live(path, &[4, 8]);
        } else {
            eprintln!("{machine}: not on this machine, not compared");
        }
    }
    eprintln!("{total} strings and their offsets equal to GNU's");
}
