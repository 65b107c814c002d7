//! The PE groups' explanations against extraction on every file of
//! tests/golden/pe: reassembled, each group equals `write_pe_group`'s
//! slice bit for bit; spans lie in the file; caps hold; and on a committed
//! launcher, spans hold the bytes they name.

use std::path::{Path, PathBuf};

use super::explain::{assemble_pe_group, explain_pe_group};
use crate::ember2024::{write_pe_group, PeGroup};
use crate::explain::{
    Contribution, Contributions, ExplainOptions, Explanation, MAX_CONTRIBUTIONS, MAX_TEXT_BYTES,
};
use crate::pe::Pe;
use crate::Error;

/// An arbitrary first index, so that offsetting by `base` is tested.
const BASE: u64 = 1000;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/pe")
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}

fn corpus() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    walk(&corpus_dir(), &mut files);
    assert!(files.len() > 50, "the PE corpus is missing");
    files
        .into_iter()
        .map(|path| {
            let doc = std::fs::read(&path).unwrap();
            (path, doc)
        })
        .collect()
}

/// The contributions of one group of `doc`, on a parse of its own (as
/// extraction has its own).
fn explain(group: PeGroup, doc: &[u8], options: &ExplainOptions) -> Explanation {
    let pe = Pe::parse_with_byte_counts(doc, None).ok();
    let mut out = Contributions::new(options);
    explain_pe_group(group, pe.as_ref(), BASE, &mut out).unwrap();
    Explanation::new(
        out,
        "test",
        Box::new(|_: &[Contribution]| Err(Error::invalid_argument("unused"))),
    )
}

fn extracted(group: PeGroup, doc: &[u8]) -> Vec<f32> {
    let mut slot = vec![0f32; group.width()];
    if let Ok(pe) = Pe::parse_with_byte_counts(doc, None) {
        write_pe_group(&pe, group, &mut slot);
    }
    slot
}

fn whole() -> ExplainOptions {
    ExplainOptions::new(MAX_CONTRIBUTIONS, MAX_TEXT_BYTES, false).unwrap()
}

#[test]
fn every_pe_group_reassembles_bit_for_bit_on_the_corpus() {
    let mut explained = 0;
    for (path, doc) in corpus() {
        for &group in PeGroup::VALUES {
            let what = format!("{} {}", path.display(), group.name());
            let explanation = explain(group, &doc, &whole());
            assert!(!explanation.truncated, "{what}");
            let mut rebuilt = vec![f32::NAN; group.width()];
            assemble_pe_group(group, &explanation.contributions, BASE, &mut rebuilt).unwrap();
            let expected = extracted(group, &doc);
            for (k, (r, e)) in rebuilt.iter().zip(&expected).enumerate() {
                assert_eq!(r.to_bits(), e.to_bits(), "{what}[{k}]: {r} != {e}");
            }
            for c in &explanation.contributions {
                let end = c.offset.checked_add(c.length);
                assert!(
                    end.is_some_and(|end| end <= doc.len() as u64),
                    "{what}: span {}+{} outside {} bytes",
                    c.offset,
                    c.length,
                    doc.len()
                );
                assert!((BASE..BASE + group.width() as u64).contains(&c.index));
            }
            explained += explanation.contributions.len();
        }
    }
    assert!(explained > 10_000, "only {explained} contributions");
}

/// thrember's import features: `dll.lower() + ":" + name`, the DLL part
/// lowercase and non-empty, the text the exact bytes hashed.
#[test]
fn import_texts_are_lowercase_dll_colon_function() {
    let mut seen = 0;
    for (path, doc) in corpus() {
        let explanation = explain(PeGroup::Imports, &doc, &whole());
        for c in &explanation.contributions {
            let local = c.index - BASE;
            if local != 0 && local < 258 {
                continue;
            }
            let colon = c.text.iter().position(|&b| b == b':');
            let dll = &c.text[..colon.unwrap_or(0)];
            assert!(
                !dll.is_empty() && dll == dll.to_ascii_lowercase().as_slice() && colon.is_some(),
                "{}: import text {:?}",
                path.display(),
                String::from_utf8_lossy(&c.text)
            );
            seen += 1;
        }
    }
    assert!(seen > 100, "only {seen} imports");
}

#[test]
fn caps_hold_and_stop_the_walk() {
    for (path, doc) in corpus().iter().step_by(7) {
        for &group in PeGroup::VALUES {
            let all = explain(group, doc, &whole()).contributions.len();
            for cap in [1, 2, 5] {
                let options = ExplainOptions::new(cap, 3, false).unwrap();
                let capped = explain(group, doc, &options);
                assert_eq!(
                    capped.contributions.len(),
                    all.min(cap),
                    "{}",
                    path.display()
                );
                assert_eq!(capped.truncated, all > cap, "{}", path.display());
                assert!(capped.contributions.iter().all(|c| c.text.len() <= 3));
            }
        }
    }
}

#[test]
fn non_pe_files_have_no_contributions() {
    for doc in [&b""[..], b"MZ", b"not a PE at all, just some text"] {
        for &group in PeGroup::VALUES {
            assert!(explain(group, doc, &whole()).contributions.is_empty());
        }
    }
    assert!(assemble_pe_group(PeGroup::Header, &[], 0, &mut [0.0; 3]).is_err());
}

/// A committed launcher, checked by hand: spans hold what they name.
#[test]
fn spans_hold_the_bytes_they_name_on_a_launcher() {
    let doc = std::fs::read(corpus_dir().join("launchers/distlib_t32.exe")).unwrap();
    let bytes = |c: &Contribution| &doc[c.offset as usize..(c.offset + c.length) as usize];

    let imports = explain(PeGroup::Imports, &doc, &whole()).contributions;
    let create_file = imports
        .iter()
        .find(|c| c.index == BASE && c.text == b"kernel32.dll:CreateProcessW")
        .expect("distlib's launcher imports CreateProcessW");
    assert_eq!(bytes(create_file), b"CreateProcessW");
    // Its hint/name entry: the 2-byte hint, the name, a NUL.
    assert_eq!(doc[(create_file.offset + create_file.length) as usize], 0);
    let kernel32 = imports
        .iter()
        .find(|c| c.index == BASE + 1 && c.text == b"kernel32.dll")
        .expect("a library");
    assert!(bytes(kernel32).eq_ignore_ascii_case(b"kernel32.dll"));
    for c in imports.iter().filter(|c| c.index == BASE) {
        let function = &c.text[c.text.iter().position(|&b| b == b':').unwrap() + 1..];
        assert_eq!(bytes(c), function, "{:?}", String::from_utf8_lossy(&c.text));
    }

    let header = explain(PeGroup::Header, &doc, &whole()).contributions;
    let timestamp = &header[0];
    assert_eq!((timestamp.index, timestamp.length), (BASE, 4));
    let stored = u32::from_le_bytes(bytes(timestamp).try_into().unwrap());
    assert_eq!(f64::from(stored), timestamp.value);
    let e_lfanew = header.iter().find(|c| c.index == BASE + 73).unwrap();
    assert_eq!((e_lfanew.offset, e_lfanew.length), (60, 4));

    let sections = explain(PeGroup::Section, &doc, &whole()).contributions;
    let text = sections
        .iter()
        .find(|c| c.index == BASE && c.text == b".text")
        .expect("a .text section");
    assert_eq!((&bytes(text)[..5], text.length), (&b".text"[..], 40));
}

/// Signed files: `num_certs` comes from WIN_CERTIFICATE records, each
/// span a whole record (its first dword is its length).
#[test]
fn certificates_are_counted_at_their_records() {
    let mut records = 0;
    for (path, doc) in corpus() {
        let explanation = explain(PeGroup::Authenticode, &doc, &whole());
        for c in explanation.contributions.iter().filter(|c| c.index == BASE) {
            let start = c.offset as usize;
            let length = u32::from_le_bytes(doc[start..start + 4].try_into().unwrap());
            assert_eq!(u64::from(length), c.length, "{}", path.display());
            records += 1;
        }
    }
    assert!(records > 0, "no signed file counted");
}
