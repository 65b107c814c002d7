//! Fuzz target `unicode_lower`: `String::from_utf8_lossy(input)` through
//! `python_str_lower` and the character-class predicates.
//!
//! Checks only what holds in Python 3.11 (idempotence of `str.lower()` does
//! NOT hold in general and is not asserted):
//! - no panic; the output is a valid `String` (guaranteed by the type) no
//!   larger than 3x the input;
//! - `python_str_lower` appends (what was in `out` before is kept);
//! - it equals the core's oracle (`rustfx::oracles::unicode_lower`, what
//!   the unit tests compare with): `python_lower(c)` for every character
//!   except the capital sigma U+03A3, which must be `'ς'` exactly in CPython's
//!   Final_Sigma context (`cased case-ignorable* Σ !(case-ignorable* cased)`,
//!   evaluated naively on the char array) and `'σ'` otherwise. This exercises
//!   the ASCII bulk path against the per-character path;
//! - ASCII characters lowercase as `to_ascii_lowercase`;
//! - the predicates `is_python_word`, `is_python_space`, `is_cased`,
//!   `is_case_ignorable` do not panic (checked on the first 512 characters),
//!   no character is both word and space, and they agree with Python on
//!   ASCII.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustfx::oracles;
use rustfx::unicode_classes::{
    is_case_ignorable, is_cased, is_python_space, is_python_word, python_lower, python_str_lower,
};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let chars: Vec<char> = s.chars().collect();

    let mut out = String::from("prefix\u{3A3}");
    python_str_lower(&s, &mut out);
    let lowered = out
        .strip_prefix("prefix\u{3A3}")
        .expect("python_str_lower must append, not overwrite");
    assert!(
        lowered.len() <= 3 * s.len(),
        "output {} bytes for {} bytes of input",
        lowered.len(),
        s.len()
    );
    assert_eq!(
        lowered,
        oracles::unicode_lower::str_lower(&s),
        "input {s:?}"
    );

    // The predicates on the first 512 characters only: with comparison
    // tracing their table searches dominate the run time otherwise.
    let mut one = String::with_capacity(8);
    for &c in chars.iter().take(512) {
        let w = is_python_word(c);
        let sp = is_python_space(c);
        let _ = is_cased(c);
        let _ = is_case_ignorable(c);
        assert!(!(w && sp), "{c:?} both word and space");
        if c.is_ascii() {
            assert_eq!(w, c.is_ascii_alphanumeric() || c == '_', "{c:?}");
            assert_eq!(
                sp,
                matches!(c, '\t'..='\r' | '\u{1C}'..='\u{1F}' | ' '),
                "{c:?}"
            );
            one.clear();
            python_lower(c, &mut one);
            let mut buf = [0u8; 4];
            assert_eq!(one.as_str(), c.to_ascii_lowercase().encode_utf8(&mut buf));
        }
    }
});
