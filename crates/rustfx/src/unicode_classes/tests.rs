use super::*;
use crate::oracles::unicode_lower::str_lower as reference_lower;

fn lower_char(c: char) -> String {
    let mut out = String::new();
    python_lower(c, &mut out);
    out
}

fn lower_str(s: &str) -> String {
    let mut out = String::new();
    python_str_lower(s, &mut out);
    out
}

#[test]
fn word_known_cases() {
    for c in [
        '_', 'a', 'Z', '0', '9', '²', '½', 'Ⅻ', '٣', 'ª', 'µ', 'ʰ', '〇', '𝟎', 'é',
    ] {
        assert!(is_python_word(c), "{c:?} U+{:04X}", c as u32);
    }
    let not_word = [
        ' ',
        '-',
        '\'',
        '.',
        '\u{0}',
        '\u{7F}',
        '\u{A0}',
        '·',
        '\u{301}',
        '\u{345}',
        '\u{903}',
        '\u{93F}',
        '😀',
        '\u{10FFFF}',
    ];
    for c in not_word {
        assert!(!is_python_word(c), "{c:?} U+{:04X}", c as u32);
    }
}

#[test]
fn space_known_cases() {
    let spaces = [
        '\t', '\n', '\u{B}', '\u{C}', '\r', '\u{1C}', '\u{1D}', '\u{1E}', '\u{1F}', ' ', '\u{85}',
        '\u{A0}', '\u{1680}', '\u{2000}', '\u{2003}', '\u{200A}', '\u{2028}', '\u{2029}',
        '\u{202F}', '\u{205F}', '\u{3000}',
    ];
    for c in spaces {
        assert!(is_python_space(c), "U+{:04X}", c as u32);
    }
    let not_spaces = [
        'a',
        '_',
        '\u{0}',
        '\u{8}',
        '\u{E}',
        '\u{1B}',
        '\u{21}',
        '\u{7F}',
        '\u{180E}',
        '\u{200B}',
        '\u{2060}',
        '\u{FEFF}',
        '\u{10FFFF}',
    ];
    for c in not_spaces {
        assert!(!is_python_space(c), "U+{:04X}", c as u32);
    }
    let count = (0..=0x10FFFF)
        .filter_map(char::from_u32)
        .filter(|&c| is_python_space(c))
        .count();
    assert_eq!(count, 29);
}

#[test]
fn case_properties_known_cases() {
    for c in ['A', 'z', 'ǅ', 'ß', 'Σ', 'ª', '\u{345}', 'ʰ', 'ⓐ'] {
        assert!(is_cased(c), "U+{:04X}", c as u32);
    }
    for c in ['1', '_', ' ', '\'', '\u{301}', 'ʹ', '中'] {
        assert!(!is_cased(c), "U+{:04X}", c as u32);
    }
    for c in [
        '\'', '.', ':', '^', '`', '\u{AD}', '\u{301}', '\u{345}', 'ʰ', '\u{2019}',
    ] {
        assert!(is_case_ignorable(c), "U+{:04X}", c as u32);
    }
    for c in ['a', 'A', '"', '-', '_', ' ', '1', 'Σ'] {
        assert!(!is_case_ignorable(c), "U+{:04X}", c as u32);
    }
}

#[test]
fn lower_known_cases() {
    assert_eq!(lower_char('A'), "a");
    assert_eq!(lower_char('a'), "a");
    assert_eq!(lower_char('_'), "_");
    assert_eq!(lower_char('İ'), "i\u{307}");
    assert_eq!(lower_char('Σ'), "σ");
    assert_eq!(lower_char('ẞ'), "ß");
    assert_eq!(lower_char('\u{2126}'), "ω"); // OHM SIGN
    assert_eq!(lower_char('\u{212A}'), "k"); // KELVIN SIGN
    assert_eq!(lower_char('ǅ'), "ǆ");
    assert_eq!(lower_char('\u{1F88}'), "\u{1F80}");
    assert_eq!(lower_char('\u{1C90}'), "\u{10D0}");
    assert_eq!(lower_char('\u{A7C0}'), "\u{A7C1}");
    assert_eq!(lower_char('\u{1E900}'), "\u{1E922}");
    // Case pairs added after Unicode 14.0 stay unchanged, as in Python 3.11.
    assert_eq!(lower_char('\u{1C89}'), "\u{1C89}");
    assert_eq!(lower_char('\u{10D50}'), "\u{10D50}");
    // Appends rather than overwrites.
    let mut out = String::from("x");
    python_lower('Q', &mut out);
    python_lower('İ', &mut out);
    assert_eq!(out, "xqi\u{307}");
}

#[test]
fn str_lower_final_sigma() {
    let cases = [
        ("", ""),
        ("Σ", "σ"),
        ("ΣΣ", "σς"),
        ("aΣA", "aσa"), // once found by proptest
        ("ΣΣΣ", "σσς"),
        ("ΑΣ", "ας"),
        ("ΑΣ Α", "ας α"),
        ("ΑΣΑ", "ασα"),
        ("ΣΑ", "σα"),
        ("Α'Σ", "α'ς"),
        ("ΑΣ'", "ας'"),
        ("ΑΣ'Α", "ασ'α"),
        ("ΑΣ.", "ας."),
        ("ΑΣ1", "ας1"),
        ("1Σ", "1σ"),
        ("ΑΣ_Α", "ας_α"),
        ("ΑΣ-Α", "ας-α"),
        ("ΑΣ\u{AD}Α", "ασ\u{AD}α"),
        ("Α\u{345}Σ", "α\u{345}ς"),
        ("\u{345}Σ", "\u{345}σ"),
        ("ΑΣ\u{345}Α", "ασ\u{345}α"),
        ("ΑΣ\u{345}", "ας\u{345}"),
        ("ΟΔΥΣΣΕΥΣ", "οδυσσευς"),
        ("ΆΣ ΈΣ", "άς ές"),
        ("İΣ", "i\u{307}ς"),
        ("Hello WORLD ΑΣ", "hello world ας"),
    ];
    for (input, want) in cases {
        assert_eq!(lower_str(input), want, "{input:?}");
    }
    let mut out = String::from("keep:");
    python_str_lower("ABC", &mut out);
    assert_eq!(out, "keep:abc");
}

proptest::proptest! {
    #[test]
    fn str_lower_matches_reference(s in "[AaΣσ '.\u{301}\u{345}ʰİ1_\u{AD}é中😀\u{10400}]{0,24}") {
        proptest::prop_assert_eq!(lower_str(&s), reference_lower(&s));
    }

    #[test]
    fn str_lower_arbitrary_input(s in proptest::prelude::any::<String>()) {
        let got = lower_str(&s);
        proptest::prop_assert_eq!(got, reference_lower(&s));
    }
}

// ------------------------------------------------------------------
// Exhaustive cross-check against Python's answers.

const GOLDEN: &str = include_str!("../../../../tests/golden/python_unicode.tsv");
const FNV_OFFSET: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01B3;

fn parse_hex_chars(field: &str) -> String {
    field
        .split(' ')
        .filter(|t| !t.is_empty())
        .map(|t| {
            let cp = u32::from_str_radix(t, 16).expect("hex code point");
            char::from_u32(cp).expect("scalar value")
        })
        .collect()
}

/// Buffers for [`block_hash`], reused across code points.
#[derive(Default)]
struct Scratch {
    lower: String,
    input: String,
    got: String,
    want: String,
}

/// The four final-sigma probes of the golden file, as
/// (`'A'` before, `x` before, `x` after, `'A'` after) the capital sigma:
/// `"AxΣ"`, `"xΣ"`, `"AΣx"`, `"AΣxA"`.
const PROBES: [(bool, bool, bool, bool); 4] = [
    (true, true, false, false),
    (false, true, false, false),
    (true, false, true, false),
    (true, false, true, true),
];

/// Appends the golden record of `x` (see the golden file's header) to
/// `bytes`, computed with this module. Also checks that each probe only
/// changes the probed sigma, and what the probes reveal about the case
/// properties.
fn record(x: char, sc: &mut Scratch, bytes: &mut Vec<u8>) {
    let Scratch {
        lower,
        input,
        got,
        want,
    } = sc;
    let cp = x as u32;
    let mut utf8 = [0; 4];
    let xs: &str = x.encode_utf8(&mut utf8);
    lower.clear();
    python_lower(x, lower);
    got.clear();
    python_str_lower(xs, got);
    assert_eq!(got, lower, "string vs char lower() of U+{cp:04X}");

    let mut flags = u8::from(is_python_word(x)) | (u8::from(is_python_space(x)) << 1);
    let mut finals = [false; 4];
    for (k, &(a_before, x_before, x_after, a_after)) in PROBES.iter().enumerate() {
        input.clear();
        want.clear();
        if a_before {
            input.push('A');
            want.push('a');
        }
        if x_before {
            input.push_str(xs);
            want.push_str(lower);
        }
        input.push(CAPITAL_SIGMA);
        let head = want.len();
        if x_after {
            input.push_str(xs);
        }
        if a_after {
            input.push('A');
        }
        got.clear();
        python_str_lower(input, got);
        let fin = match got.get(head..).and_then(|t| t.chars().next()) {
            Some(SMALL_FINAL_SIGMA) => true,
            Some(SMALL_SIGMA) => false,
            other => panic!("lower({input:?}): sigma became {other:?}"),
        };
        // With x == 'Σ' the probe holds two sigmas, both context-dependent.
        if x != CAPITAL_SIGMA {
            want.push(if fin { SMALL_FINAL_SIGMA } else { SMALL_SIGMA });
            if x_after {
                want.push_str(lower);
            }
            if a_after {
                want.push('a');
            }
            assert_eq!(got, want, "lower({input:?})");
        }
        finals[k] = fin;
        flags |= u8::from(fin) << (2 + k);
    }
    // "AxΣ" and "xΣ" differ iff x is skipped as case-ignorable;
    // otherwise both tell whether x is cased.
    let ci = finals[0] != finals[1];
    assert_eq!(is_case_ignorable(x), ci, "Case_Ignorable of U+{cp:04X}");
    if !ci {
        assert_eq!(is_cased(x), finals[1], "Cased of U+{cp:04X}");
    }

    bytes.push(flags);
    bytes.push(u8::try_from(lower.chars().count()).unwrap_or(u8::MAX));
    for o in lower.chars() {
        bytes.extend_from_slice(&(o as u32).wrapping_sub(cp).to_le_bytes());
    }
}

/// FNV-1a-64 of the records of the scalar values in block `block`.
fn block_hash(block: u32, sc: &mut Scratch, bytes: &mut Vec<u8>) -> u64 {
    bytes.clear();
    for x in (block * 256..block * 256 + 256).filter_map(char::from_u32) {
        record(x, sc, bytes);
    }
    bytes.iter().fold(FNV_OFFSET, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    })
}

#[test]
fn golden_matches_python_for_every_code_point() {
    use rayon::prelude::*;

    let mut version_seen = false;
    let mut expected: Vec<(u32, u64)> = Vec::new();
    let mut string_probes = 0;
    for line in GOLDEN.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        match f[..] {
            ["V", py, uni] => {
                assert_eq!(py, PYTHON_VERSION, "golden file vs tables");
                assert_eq!(uni, UNICODE_VERSION, "golden file vs tables");
                version_seen = true;
            }
            ["B", first, count, hash] => {
                let first = u32::from_str_radix(first, 16).expect("block");
                let count: u32 = count.parse().expect("count");
                let hash = u64::from_str_radix(hash, 16).expect("hash");
                let next = u32::try_from(expected.len()).expect("few blocks");
                assert_eq!(first, next, "blocks must be contiguous");
                expected.extend((first..first + count).map(|b| (b, hash)));
            }
            ["P", input, want] => {
                let input = parse_hex_chars(input);
                let want = parse_hex_chars(want);
                assert_eq!(lower_str(&input), want, "lower({input:?})");
                assert_eq!(reference_lower(&input), want, "reference({input:?})");
                string_probes += 1;
            }
            _ => panic!("bad golden line {line:?}"),
        }
    }
    assert!(version_seen, "no V line");
    assert!(string_probes >= 200, "only {string_probes} string probes");
    assert_eq!(
        expected.len(),
        0x110000 / 256,
        "golden file must cover all blocks"
    );

    let mismatched: Vec<String> = expected
        .par_iter()
        .map_init(
            || (Scratch::default(), Vec::new()),
            |(sc, bytes), &(block, hash)| {
                (block_hash(block, sc, bytes) != hash).then(|| format!("U+{:04X}", block * 256))
            },
        )
        .flatten()
        .collect();
    assert!(
        mismatched.is_empty(),
        "{} blocks of 256 code points differ from Python, starting at {:?} \
         (see `.venv/bin/python python/tools/gen_unicode_classes.py --dump HEX`)",
        mismatched.len(),
        mismatched
    );
}

#[test]
fn tables_are_sorted_and_disjoint() {
    for table in [
        tables::WORD,
        tables::SPACE,
        tables::CASED,
        tables::CASE_IGNORABLE,
    ] {
        assert!(table.iter().all(|&(a, b)| tables::LOW <= a && a <= b));
        assert!(table.windows(2).all(|w| w[0].1 + 1 < w[1].0));
    }
    assert!(tables::LOWER
        .iter()
        .all(|&(a, b, _, stride)| tables::LOW <= a && a <= b && (stride != 0 || a == b)));
    assert!(tables::LOWER.windows(2).all(|w| w[0].1 < w[1].0));
    assert!(tables::LOWER_MULTI.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(tables::LOWER_LOW.len(), tables::LOW as usize);
    assert!(tables::LOWER_LOW.len().is_power_of_two());
}
