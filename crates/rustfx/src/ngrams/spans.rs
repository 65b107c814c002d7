//! The n-grams of a document with the bytes they come from, for
//! explanations (`explain`).
//!
//! A separate, simple walk, written from the definitions (those of
//! `crate::oracles::ngrams`) rather than from the streaming paths: each
//! tokenizer's units (tokens or characters) come one at a time, each with
//! its text as the extractor sees it (lowercased) and the byte range of the
//! document it comes from, and each width is a pass of its own with a
//! window of the last `width` units. So the exactness test of explanations
//! checks extraction's fast paths against this one, and memory is the
//! window, never a list of the document's tokens or a decoded copy of it.
//!
//! Spans are in the original document: a lowered character keeps the range
//! of the character it comes from (`'İ'` lowers to two characters, both
//! with its range), a U+FFFD the range of the invalid bytes it replaces, a
//! collapsed run of spaces (`sklearn_char`) the whole run, and the padding
//! spaces of `sklearn_char_wb` an empty range at their word's edge, so an
//! n-gram's span covers its real characters only.

use super::config::{NgramConfig, Tokenizer};
use crate::unicode_classes::{
    is_final_sigma, is_python_space, is_python_word, python_lower, CAPITAL_SIGMA,
};
use std::collections::VecDeque;
use std::ops::ControlFlow;

type Flow = ControlFlow<()>;

/// An n-gram as the extractor hashes it (lowercased, joined), and the span
/// `start..end` of the document its units come from.
#[derive(Clone, Copy, Debug)]
pub(super) struct SpannedGram<'a> {
    pub(super) text: &'a [u8],
    pub(super) start: usize,
    pub(super) end: usize,
}

/// A token or a character as the extractor sees it, and its span.
struct Unit<'a> {
    text: &'a [u8],
    start: usize,
    end: usize,
}

/// Calls `f` with every n-gram of `doc` in the extractor's output order
/// (each width in turn; for `sklearn_char_wb`, each word in turn, its
/// widths in turn), until `f` breaks.
pub(super) fn spanned_grams(
    config: &NgramConfig,
    doc: &[u8],
    f: &mut impl FnMut(SpannedGram<'_>) -> Flow,
) -> Flow {
    let lowercase = config.lowercase;
    let joiner = match config.tokenizer {
        Tokenizer::Whitespace | Tokenizer::Word | Tokenizer::SklearnWord => Some(b' '),
        Tokenizer::Char | Tokenizer::Byte | Tokenizer::SklearnChar => None,
        Tokenizer::SklearnCharWb => return char_wb_grams(doc, lowercase, &config.widths, f),
    };
    for &width in &config.widths {
        let mut window = Window::new(width, joiner);
        let push = &mut |unit: Unit<'_>| window.push(unit, f);
        match config.tokenizer {
            Tokenizer::Whitespace => byte_runs(doc, lowercase, is_tf_space, push)?,
            Tokenizer::Word => byte_runs(doc, lowercase, is_non_word_byte, push)?,
            Tokenizer::Byte => bytes(doc, lowercase, push)?,
            Tokenizer::Char => tf_chars(doc, lowercase, push)?,
            Tokenizer::SklearnWord => python_words(doc, lowercase, push)?,
            // (`sklearn_char_wb` returned above.)
            Tokenizer::SklearnChar | Tokenizer::SklearnCharWb => {
                collapsed_chars(doc, lowercase, push)?
            }
        }
    }
    ControlFlow::Continue(())
}

/// The last `width` units, and the n-gram they make.
struct Window {
    width: usize,
    joiner: Option<u8>,
    units: VecDeque<(Vec<u8>, usize, usize)>,
    gram: Vec<u8>,
}

impl Window {
    fn new(width: usize, joiner: Option<u8>) -> Self {
        Window {
            width,
            joiner,
            units: VecDeque::new(),
            gram: Vec::new(),
        }
    }

    /// Adds a unit; once there are `width`, calls `f` with the n-gram
    /// that ends at it: the texts joined, the span from the first unit's
    /// start to the last one's end.
    fn push(&mut self, unit: Unit<'_>, f: &mut impl FnMut(SpannedGram<'_>) -> Flow) -> Flow {
        // The oldest unit's buffer is reused for the newest.
        let mut text = match self.units.len() >= self.width {
            true => self.units.pop_front().map(|u| u.0).unwrap_or_default(),
            false => Vec::new(),
        };
        text.clear();
        text.extend_from_slice(unit.text);
        self.units.push_back((text, unit.start, unit.end));
        if self.units.len() < self.width {
            return ControlFlow::Continue(());
        }
        self.gram.clear();
        let (mut start, mut end) = (usize::MAX, 0);
        for (i, (text, s, e)) in self.units.iter().enumerate() {
            if let Some(joiner) = self.joiner.filter(|_| i > 0) {
                self.gram.push(joiner);
            }
            self.gram.extend_from_slice(text);
            (start, end) = (start.min(*s), end.max(*e));
        }
        f(SpannedGram {
            text: &self.gram,
            start,
            end,
        })
    }
}

/// `tf.strings.split`'s whitespace.
fn is_tf_space(b: u8) -> bool {
    b" \t\n\x0b\x0c\r".contains(&b)
}

/// Not `[A-Za-z0-9_]`.
fn is_non_word_byte(b: u8) -> bool {
    !(b.is_ascii_alphanumeric() || b == b'_')
}

/// The maximal runs of bytes that are not `separates`, ASCII-lowercased.
fn byte_runs(
    doc: &[u8],
    lowercase: bool,
    separates: fn(u8) -> bool,
    f: &mut impl FnMut(Unit<'_>) -> Flow,
) -> Flow {
    let mut text = Vec::new();
    let mut start = 0;
    for token in doc.split(|&b| separates(b)) {
        let end = start + token.len();
        if !token.is_empty() {
            text.clear();
            text.extend_from_slice(token);
            if lowercase {
                text.make_ascii_lowercase();
            }
            f(Unit {
                text: &text,
                start,
                end,
            })?;
        }
        // Past the separator that ended the token.
        start = end + 1;
    }
    ControlFlow::Continue(())
}

/// Every byte, ASCII-lowercased.
fn bytes(doc: &[u8], lowercase: bool, f: &mut impl FnMut(Unit<'_>) -> Flow) -> Flow {
    for (start, &b) in doc.iter().enumerate() {
        let b = if lowercase { b.to_ascii_lowercase() } else { b };
        f(Unit {
            text: &[b],
            start,
            end: start + 1,
        })?;
    }
    ControlFlow::Continue(())
}

/// The characters of `doc` decoded as `String::from_utf8_lossy` decodes
/// it (one U+FFFD per maximal invalid subsequence), each with its span, the
/// valid run it is in and its position there (the context of the final
/// sigma: no U+FFFD is cased or case-ignorable, so none reaches past one).
fn lossy_chars(doc: &[u8], f: &mut impl FnMut(char, usize, usize, &str, usize) -> Flow) -> Flow {
    let mut at = 0;
    for chunk in doc.utf8_chunks() {
        let valid = chunk.valid();
        for (i, c) in valid.char_indices() {
            f(c, at + i, at + i + c.len_utf8(), valid, i)?;
        }
        at += valid.len();
        let invalid = chunk.invalid().len();
        if invalid > 0 {
            f(char::REPLACEMENT_CHARACTER, at, at + invalid, "", 0)?;
            at += invalid;
        }
    }
    ControlFlow::Continue(())
}

/// A unit of one character.
fn char_unit(c: char, start: usize, end: usize, f: &mut impl FnMut(Unit<'_>) -> Flow) -> Flow {
    let mut utf8 = [0u8; 4];
    f(Unit {
        text: c.encode_utf8(&mut utf8).as_bytes(),
        start,
        end,
    })
}

/// The `char` tokenizer's characters, ASCII-lowercased.
fn tf_chars(doc: &[u8], lowercase: bool, f: &mut impl FnMut(Unit<'_>) -> Flow) -> Flow {
    lossy_chars(doc, &mut |c, start, end, _, _| {
        let c = if lowercase { c.to_ascii_lowercase() } else { c };
        char_unit(c, start, end, f)
    })
}

/// The characters of Python's `text.lower()` (when `lowercase`) of `doc`
/// decoded lossily, each with the span of the character it comes from.
fn python_chars(
    doc: &[u8],
    lowercase: bool,
    f: &mut impl FnMut(char, usize, usize) -> Flow,
) -> Flow {
    let mut lowered = String::new();
    lossy_chars(doc, &mut |c, start, end, run, at| {
        if !lowercase {
            return f(c, start, end);
        }
        lowered.clear();
        if c == CAPITAL_SIGMA {
            let before = run.get(..at).unwrap_or_default();
            let after = run.get(at + c.len_utf8()..).unwrap_or_default();
            lowered.push(match is_final_sigma(before, after) {
                true => '\u{3c2}',
                false => '\u{3c3}',
            });
        } else {
            python_lower(c, &mut lowered);
        }
        for c in lowered.chars() {
            f(c, start, end)?;
        }
        ControlFlow::Continue(())
    })
}

/// scikit-learn's word tokens: maximal runs of at least two Python `\w`
/// characters of the lowered text.
fn python_words(doc: &[u8], lowercase: bool, f: &mut impl FnMut(Unit<'_>) -> Flow) -> Flow {
    let mut word = Vec::new();
    let (mut chars, mut start, mut end) = (0usize, 0, 0);
    let mut utf8 = [0u8; 4];
    python_chars(doc, lowercase, &mut |c, s, e| {
        if is_python_word(c) {
            if chars == 0 {
                word.clear();
                start = s;
            }
            word.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            (end, chars) = (e, chars + 1);
            return ControlFlow::Continue(());
        }
        if std::mem::take(&mut chars) >= 2 {
            f(Unit {
                text: &word,
                start,
                end,
            })?;
        }
        ControlFlow::Continue(())
    })?;
    if chars >= 2 {
        f(Unit {
            text: &word,
            start,
            end,
        })?;
    }
    ControlFlow::Continue(())
}

/// scikit-learn `analyzer="char"`'s characters: those of the lowered text,
/// each run of two or more Python spaces one `' '` spanning the run.
fn collapsed_chars(doc: &[u8], lowercase: bool, f: &mut impl FnMut(Unit<'_>) -> Flow) -> Flow {
    // The run of spaces being read: its first character, span and length.
    let mut spaces: Option<Spaces> = None;
    python_chars(doc, lowercase, &mut |c, start, end| {
        if is_python_space(c) {
            match &mut spaces {
                Some((_, _, run_end, n)) => (*run_end, *n) = (end, *n + 1),
                None => spaces = Some((c, start, end, 1)),
            }
            return ControlFlow::Continue(());
        }
        spaces_unit(spaces.take(), f)?;
        char_unit(c, start, end, f)
    })?;
    spaces_unit(spaces, f)
}

/// A run of Python spaces: its first character, its span, its length.
type Spaces = (char, usize, usize, usize);

/// The unit of a run of spaces, if any: `' '` when it is two or more.
fn spaces_unit(spaces: Option<Spaces>, f: &mut impl FnMut(Unit<'_>) -> Flow) -> Flow {
    match spaces {
        Some((_, start, end, n)) if n >= 2 => f(Unit {
            text: b" ",
            start,
            end,
        }),
        Some((c, start, end, _)) => char_unit(c, start, end, f),
        None => ControlFlow::Continue(()),
    }
}

/// scikit-learn `analyzer="char_wb"`'s n-grams: for each word (a maximal
/// run of characters that are not Python spaces), those of the word padded
/// with a space on each side (see [`padded_word_grams`]).
fn char_wb_grams(
    doc: &[u8],
    lowercase: bool,
    widths: &[usize],
    f: &mut impl FnMut(SpannedGram<'_>) -> Flow,
) -> Flow {
    let mut word: Option<(usize, usize)> = None;
    lossy_chars(doc, &mut |c, start, end, _, _| {
        if !is_python_space(c) {
            word = Some((word.map_or(start, |w| w.0), end));
            return ControlFlow::Continue(());
        }
        match word.take() {
            Some((start, end)) => padded_word_grams(doc, start, end, lowercase, widths, f),
            None => ControlFlow::Continue(()),
        }
    })?;
    match word {
        Some((start, end)) => padded_word_grams(doc, start, end, lowercase, widths, f),
        None => ControlFlow::Continue(()),
    }
}

/// The n-grams of the word `doc[start..end]`, lowered (a space ends every
/// final-sigma context, so the word is its own) and padded: for each width,
/// its windows, except that a padded word no longer than the width is one
/// n-gram, whole, once for all such widths (scikit-learn's `break` for an
/// increasing range). Each word is decoded again per width: no list of its
/// characters is kept.
fn padded_word_grams(
    doc: &[u8],
    start: usize,
    end: usize,
    lowercase: bool,
    widths: &[usize],
    f: &mut impl FnMut(SpannedGram<'_>) -> Flow,
) -> Flow {
    let word = doc.get(start..end).unwrap_or_default();
    let mut units = 2;
    let _ = python_chars(word, lowercase, &mut |_, _, _| {
        units += 1;
        ControlFlow::Continue(())
    });
    let mut whole = false;
    for &width in widths {
        if units <= width {
            if !whole {
                whole = true;
                let mut text = vec![b' '];
                let mut utf8 = [0u8; 4];
                let _ = python_chars(word, lowercase, &mut |c, _, _| {
                    text.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                    ControlFlow::Continue(())
                });
                text.push(b' ');
                f(SpannedGram {
                    text: &text,
                    start,
                    end,
                })?;
            }
            continue;
        }
        let mut window = Window::new(width, None);
        let pad = |at| Unit {
            text: b" ",
            start: at,
            end: at,
        };
        window.push(pad(start), f)?;
        python_chars(word, lowercase, &mut |c, s, e| {
            char_unit(c, start + s, start + e, &mut |unit| window.push(unit, f))
        })?;
        window.push(pad(end), f)?;
    }
    ControlFlow::Continue(())
}
