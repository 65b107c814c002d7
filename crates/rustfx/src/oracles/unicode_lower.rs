//! Python's `str.lower()`, for [`crate::unicode_classes`]: CPython's
//! `do_lower` over a code point array, each character lowered alone but
//! the capital sigma, which is final (`ς`) in the Final_Sigma context
//! (`cased case-ignorable* Σ !(case-ignorable* cased)`) and `σ` elsewhere.

use crate::unicode_classes::{is_case_ignorable, is_cased, python_lower, CAPITAL_SIGMA};

const SMALL_SIGMA: char = '\u{3C3}';
const SMALL_FINAL_SIGMA: char = '\u{3C2}';

/// `s.lower()`: CPython's `do_lower` over a code point array, transcribed
/// naively.
pub fn str_lower(s: &str) -> String {
    let cs: Vec<char> = s.chars().collect();
    let mut out = String::new();
    for (i, &c) in cs.iter().enumerate() {
        if c != CAPITAL_SIGMA {
            python_lower(c, &mut out);
            continue;
        }
        let mut j = i;
        let mut prev = None;
        while j > 0 {
            j -= 1;
            if !is_case_ignorable(cs[j]) {
                prev = Some(cs[j]);
                break;
            }
        }
        let mut fin = prev.is_some_and(is_cased);
        if fin {
            let next = cs[i + 1..].iter().find(|&&c| !is_case_ignorable(c));
            fin = next.is_none_or(|&c| !is_cased(c));
        }
        out.push(if fin { SMALL_FINAL_SIGMA } else { SMALL_SIGMA });
    }
    out
}
