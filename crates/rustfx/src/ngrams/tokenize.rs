//! The tokenizers, each a [`TokenSource`] that appends its tokens' bytes
//! (lowercased on the way when asked) to a [`TokenBuffer`]: runs of ASCII
//! bytes found by [`scan`](super::scan) ([`AsciiWords`]), and
//! scikit-learn's words and characters of Python strings
//! ([`PythonWords`], [`PythonChars`], and [`SklearnWords`] for text that is
//! not valid UTF-8).

use super::scan::{AsciiTokens, ByteClass};
use super::token_buffer::TokenBuffer;
use super::utf8::first_valid_run_beyond_ascii;
use crate::unicode_classes::{is_final_sigma, is_python_space, is_python_word, python_lower};

/// Tokens (or characters) of a document, in order.
pub(super) trait TokenSource {
    /// Appends the bytes of the next token to `out`, with exactly one push;
    /// false at the end.
    fn next_token(&mut self, out: &mut TokenBuffer) -> bool;
}

/// Tokens that are runs of non-separator bytes (at least `min_len` long),
/// lowercased (ASCII) as they are copied.
pub(super) struct AsciiWords<'a> {
    tokens: AsciiTokens<'a>,
    lowercase: bool,
}

impl<'a> AsciiWords<'a> {
    /// `min_len`: 1 or 2 (see [`AsciiTokens::new`]).
    pub(super) fn new(text: &'a [u8], class: ByteClass, lowercase: bool, min_len: usize) -> Self {
        AsciiWords {
            tokens: AsciiTokens::new(text, class, min_len),
            lowercase,
        }
    }

    /// Starts over on `text`.
    pub(super) fn reset(&mut self, text: &'a [u8]) {
        self.tokens.reset(text);
    }

    /// The byte range of the next token in the text, not copied.
    #[inline(always)]
    pub(super) fn next_range(&mut self) -> Option<(usize, usize)> {
        self.tokens.next()
    }
}

impl TokenSource for AsciiWords<'_> {
    #[inline(always)]
    fn next_token(&mut self, out: &mut TokenBuffer) -> bool {
        let Some((start, end)) = self.next_range() else {
            return false;
        };
        out.push_text(self.tokens.text(), start, end, self.lowercase);
        true
    }
}

/// Python's `c.lower()` for the character `c` at byte `pos` of `text`, as
/// `text.lower()` maps it: the capital sigma looks at its neighbours.
fn python_lower_at(text: &str, pos: usize, c: char, out: &mut String) {
    if c == '\u{3a3}' {
        let before = text.get(..pos).unwrap_or_default();
        let after = text.get(pos + c.len_utf8()..).unwrap_or_default();
        out.push(if is_final_sigma(before, after) {
            '\u{3c2}'
        } else {
            '\u{3c3}'
        });
    } else {
        python_lower(c, out);
    }
}

/// The characters of `text.lower()` (when `lowercase`), each with the byte
/// range of the character of `text` it comes from. `'İ'` lowers to two
/// characters, both from the same range.
struct LoweredChars<'a> {
    text: &'a str,
    pos: usize,
    lowercase: bool,
    /// The lowering of the last non-ASCII character, and how much of it has
    /// been handed out.
    lowered: String,
    handed: usize,
    source: (usize, usize),
}

impl<'a> LoweredChars<'a> {
    fn new(text: &'a str, lowercase: bool) -> Self {
        LoweredChars {
            text,
            pos: 0,
            lowercase,
            lowered: String::new(),
            handed: 0,
            source: (0, 0),
        }
    }

    /// Starts over on `text`, keeping the buffer's allocation.
    fn reset(&mut self, text: &'a str) {
        (self.text, self.pos, self.handed, self.source) = (text, 0, 0, (0, 0));
        self.lowered.clear();
    }

    /// The next character and its source range, and whether it is exactly
    /// the source character (not changed by lowering).
    #[inline]
    fn next(&mut self) -> Option<(char, usize, usize, bool)> {
        if let Some(c) = self
            .lowered
            .get(self.handed..)
            .and_then(|s| s.chars().next())
        {
            self.handed += c.len_utf8();
            return Some((c, self.source.0, self.source.1, false));
        }
        let start = self.pos;
        let &lead = self.text.as_bytes().get(start)?;
        if lead.is_ascii() {
            self.pos += 1;
            let c = if self.lowercase {
                lead.to_ascii_lowercase()
            } else {
                lead
            };
            return Some((char::from(c), start, start + 1, c == lead));
        }
        let c = self.text.get(start..)?.chars().next()?;
        let end = start + c.len_utf8();
        self.pos = end;
        // U+FFFD, what invalid UTF-8 decodes to (most of a binary's
        // non-ASCII characters), is its own lowercase: no table lookup.
        if !self.lowercase || c == char::REPLACEMENT_CHARACTER {
            return Some((c, start, end, true));
        }
        self.lowered.clear();
        python_lower_at(self.text, start, c, &mut self.lowered);
        let first = self.lowered.chars().next()?;
        if self.lowered.len() == first.len_utf8() && first == c {
            self.lowered.clear();
            return Some((c, start, end, true));
        }
        self.handed = first.len_utf8();
        self.source = (start, end);
        Some((first, start, end, false))
    }
}

/// scikit-learn's word tokens of a document that is not valid UTF-8 (a
/// binary, a compressed file), without decoding it whole: each maximal
/// invalid subsequence decodes to U+FFFD, which is neither a word
/// character nor cased, so no token, and no final-sigma context, reaches
/// across it, and each valid run can be tokenized on its own: with
/// [`PythonWords`] where it has characters beyond ASCII, else as ASCII
/// ([`AsciiWords`]), which also reads the invalid bytes between such runs
/// as the separators they are. Decoding the whole document
/// (`String::from_utf8_lossy`) and reading it a character at a time made
/// such files 3x slower than text.
pub(super) struct SklearnWords<'a> {
    doc: &'a [u8],
    /// Where the runs not yet read start.
    at: usize,
    /// The run being read: `unicode` if there is one, else `ascii`, a run
    /// with no valid character beyond ASCII (its invalid sequences are
    /// not word bytes, so its ASCII runs, valid or not in between, are
    /// tokenized as one). One of each serves every run of its kind: a
    /// compressed file has a run every ~35 bytes.
    ascii: AsciiWords<'a>,
    unicode: PythonWords<'a>,
    in_unicode: bool,
}

/// The next run of [`SklearnWords`].
enum ValidRun<'a> {
    Ascii(&'a [u8]),
    Unicode(&'a str),
}

impl<'a> SklearnWords<'a> {
    pub(super) fn new(doc: &'a [u8], lowercase: bool) -> Self {
        SklearnWords {
            doc,
            at: 0,
            ascii: AsciiWords::new(&[], ByteClass::NonWord, lowercase, 2),
            unicode: PythonWords::new("", lowercase),
            in_unicode: false,
        }
    }

    /// The run from `at` on: up to the valid run around the first
    /// character beyond ASCII, read as ASCII; else that valid run, to the
    /// next invalid sequence (or the end), read as Unicode. A compressed
    /// file has an invalid sequence every few bytes, but a valid character
    /// beyond ASCII only every ~35: one run per valid run (`Utf8Chunks`)
    /// made such files 1.9x slower than text.
    fn next_run(&mut self) -> Option<ValidRun<'a>> {
        let doc = self.doc;
        let from = self.at;
        if from >= doc.len() {
            return None;
        }
        let Some(valid_from) = first_valid_run_beyond_ascii(doc, from) else {
            self.at = doc.len();
            return Some(ValidRun::Ascii(&doc[from..]));
        };
        if valid_from > from {
            self.at = valid_from;
            return Some(ValidRun::Ascii(&doc[from..valid_from]));
        }
        let rest = &doc[from..];
        let valid = match std::str::from_utf8(rest) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&rest[..e.valid_up_to()]).expect("valid up to here"),
        };
        self.at = from + valid.len();
        Some(ValidRun::Unicode(valid))
    }
}

impl TokenSource for SklearnWords<'_> {
    fn next_token(&mut self, out: &mut TokenBuffer) -> bool {
        loop {
            let found = match self.in_unicode {
                true => self.unicode.next_token(out),
                false => self.ascii.next_token(out),
            };
            if found {
                return true;
            }
            match self.next_run() {
                None => return false,
                Some(ValidRun::Ascii(run)) => {
                    self.in_unicode = false;
                    self.ascii.reset(run);
                }
                Some(ValidRun::Unicode(run)) => {
                    self.in_unicode = true;
                    self.unicode.reset(run);
                }
            }
        }
    }
}

/// scikit-learn's word tokens of any text: maximal runs of at least two
/// Python `\w` characters of `text.lower()` (when `lowercase`).
pub(super) struct PythonWords<'a> {
    chars: LoweredChars<'a>,
    text: &'a str,
    /// The token being read: source range, characters, bytes (lowered).
    start: usize,
    end: usize,
    len: usize,
    bytes: Vec<u8>,
    done: bool,
}

impl<'a> PythonWords<'a> {
    pub(super) fn new(text: &'a str, lowercase: bool) -> Self {
        PythonWords {
            chars: LoweredChars::new(text, lowercase),
            text,
            start: 0,
            end: 0,
            len: 0,
            bytes: Vec::new(),
            done: false,
        }
    }

    /// Starts over on `text`, keeping the buffers' allocations.
    fn reset(&mut self, text: &'a str) {
        self.chars.reset(text);
        (self.text, self.start, self.end, self.len, self.done) = (text, 0, 0, 0, false);
        self.bytes.clear();
    }

    /// Appends the token just ended, if long enough.
    fn take(&mut self, out: &mut TokenBuffer) -> bool {
        if std::mem::take(&mut self.len) < 2 {
            return false;
        }
        if self.chars.lowercase {
            out.push(&self.bytes);
        } else {
            out.push_text(self.text.as_bytes(), self.start, self.end, false);
        }
        true
    }
}

impl TokenSource for PythonWords<'_> {
    fn next_token(&mut self, out: &mut TokenBuffer) -> bool {
        while !self.done {
            let Some((c, start, end, _)) = self.chars.next() else {
                self.done = true;
                return self.take(out);
            };
            let word = if c.is_ascii() {
                !ByteClass::NonWord.is_separator(c as u8)
            } else {
                is_python_word(c)
            };
            if word {
                if self.len == 0 {
                    self.start = start;
                    self.bytes.clear();
                }
                self.end = end;
                self.len += 1;
                if self.chars.lowercase {
                    let mut utf8 = [0u8; 4];
                    self.bytes
                        .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                }
            } else if self.len > 0 && self.take(out) {
                return true;
            }
        }
        false
    }
}

/// scikit-learn `analyzer="char"`'s characters of any text: `text.lower()`
/// (when `lowercase`) with every run of two or more Python `\s` characters
/// replaced by one space.
pub(super) struct PythonChars<'a> {
    chars: LoweredChars<'a>,
    text: &'a str,
}

impl<'a> PythonChars<'a> {
    pub(super) fn new(text: &'a str, lowercase: bool) -> Self {
        PythonChars {
            chars: LoweredChars::new(text, lowercase),
            text,
        }
    }

    /// Length of the Python space at byte `pos`, if there is one.
    #[inline]
    fn space_at(&self, pos: usize) -> Option<usize> {
        let &lead = self.text.as_bytes().get(pos)?;
        if lead.is_ascii() {
            return ByteClass::PythonSpace.is_separator(lead).then_some(1);
        }
        let c = self.text.get(pos..)?.chars().next()?;
        is_python_space(c).then(|| c.len_utf8())
    }
}

impl TokenSource for PythonChars<'_> {
    #[inline]
    fn next_token(&mut self, out: &mut TokenBuffer) -> bool {
        let Some((c, start, end, same)) = self.chars.next() else {
            return false;
        };
        // Lowering neither makes nor unmakes spaces, so the runs are those
        // of the source text.
        let space = if c.is_ascii() {
            ByteClass::PythonSpace.is_separator(c as u8)
        } else {
            is_python_space(c)
        };
        if space && self.space_at(end).is_some() {
            let mut end = end;
            while let Some(len) = self.space_at(end) {
                end += len;
            }
            self.chars.pos = end;
            out.push(b" ");
        } else if same {
            out.push_text(self.text.as_bytes(), start, end, false);
        } else {
            let mut utf8 = [0u8; 4];
            out.push(c.encode_utf8(&mut utf8).as_bytes());
        }
        true
    }
}
