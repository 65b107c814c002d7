//! From a document to its n-grams, streaming: tokens (or characters) are
//! produced as they are found and n-grams are emitted a block of tokens
//! later, so no list of a document's tokens and no lowercased copy of it
//! is ever built.
//!
//! [`NgramHasher::grams`] picks, for the configured tokenizer, where the
//! tokens come from ([`tokenize`](super::tokenize)) and how their n-grams
//! are formed: windows of a [`TokenBuffer`]'s tokens, or of bytes or
//! characters ([`window`](super::window)); in output order, or all widths
//! in one pass.

use super::config::Tokenizer;
use super::hasher::NgramHasher;
use super::scan::ByteClass;
use super::scratch::{with_char_buffers, GramScratch};
use super::token_buffer::{TokenBuffer, SHORT_DOC};
use super::tokenize::{AsciiWords, PythonChars, SklearnWords, TokenSource};
use super::window::{ascii_collapsed_ngrams, byte_ngrams, char_ngrams, char_wb_ngrams, Gram};
use std::ops::ControlFlow;

/// How the n-grams of a document are produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Order {
    /// In output order, one pass over the tokens per width, so a caller that
    /// stops early never scans further than it needs.
    Output,
    /// One pass over the tokens for all widths, each n-gram tagged with a
    /// group: concatenating the groups, each in the order given, is the
    /// output order (the group of a token n-gram is its width's position in
    /// `widths`; other tokenizers, and the tokens of a short document,
    /// produce output order in group 0).
    OnePass,
}

impl NgramHasher {
    /// Every n-gram of `doc`, with its group, in `order`.
    pub(super) fn grams<'d>(
        &self,
        doc: &'d [u8],
        order: Order,
        gram_scratch: &mut GramScratch<'_, 'd>,
        f: &mut impl FnMut(usize, Gram<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let buffer = &mut *gram_scratch.buffer;
        let widths = &self.config.widths[..];
        let lowercase = self.config.lowercase;
        let space = Some(b' ');
        match self.config.tokenizer {
            Tokenizer::Whitespace => {
                self.ascii_words(doc, ByteClass::Whitespace, 1, order, gram_scratch, f)
            }
            Tokenizer::Word => self.ascii_words(doc, ByteClass::NonWord, 1, order, gram_scratch, f),
            Tokenizer::Byte => byte_ngrams(doc, lowercase, widths, &mut |gram| f(0, gram)),
            // On ASCII, characters are bytes.
            Tokenizer::Char if doc.is_ascii() => {
                byte_ngrams(doc, lowercase, widths, &mut |gram| f(0, gram))
            }
            Tokenizer::Char => with_char_buffers(|text, starts| {
                passes(widths, order, |widths| {
                    char_ngrams(doc, lowercase, widths, text, starts, f)
                })
            }),
            // On ASCII, Python's `\w` is `[A-Za-z0-9_]` and `str.lower()` is
            // ASCII lowercasing, which keeps every byte's class.
            Tokenizer::SklearnWord if doc.is_ascii() => {
                self.ascii_words(doc, ByteClass::NonWord, 2, order, gram_scratch, f)
            }
            Tokenizer::SklearnWord => joined(space, doc.len(), widths, order, buffer, f, || {
                SklearnWords::new(doc, lowercase)
            }),
            Tokenizer::SklearnChar if doc.is_ascii() => {
                let mut buffer = Vec::new();
                passes(widths, order, |widths| {
                    ascii_collapsed_ngrams(doc, lowercase, widths, &mut buffer, &mut |k, gram| {
                        f(k, Gram::exact(gram))
                    })
                })
            }
            Tokenizer::SklearnChar => {
                let text = String::from_utf8_lossy(doc);
                joined(None, doc.len(), widths, order, buffer, f, || {
                    PythonChars::new(&text, lowercase)
                })
            }
            Tokenizer::SklearnCharWb => {
                char_wb_ngrams(doc, lowercase, widths, &mut |gram| f(0, gram))
            }
        }
    }

    /// n-grams of the runs of non-`class` bytes of at least `min_len` bytes,
    /// joined with " ", as [`joined`] gives them. A pass of unigrams alone that
    /// keeps the text's case hands out slices of the text itself, with the rest
    /// of the document after each (a hash reads whole words past the token):
    /// no token is copied. Measured on the README pipeline's job (the first
    /// 1,024 whitespace ids of each file, mostly unigrams), the FX took 40 ms
    /// instead of 56.
    fn ascii_words<'d>(
        &self,
        doc: &'d [u8],
        class: ByteClass,
        min_len: usize,
        order: Order,
        gram_scratch: &mut GramScratch<'_, 'd>,
        f: &mut impl FnMut(usize, Gram<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let (widths, lowercase) = (&self.config.widths[..], self.config.lowercase);
        let GramScratch { buffer, words } = gram_scratch;
        passes(widths, token_order(order, doc.len()), |widths| {
            // One scanner for the batch (the hasher's tokenizer, so the
            // same class and minimum length), started over on each record.
            let words = match words {
                Some(words) => {
                    words.reset(doc);
                    words
                }
                None => words.insert(AsciiWords::new(doc, class, lowercase, min_len)),
            };
            if widths != [1] || lowercase {
                return buffer.emit_windows(Some(b' '), words, widths, f);
            }
            while let Some((start, end)) = words.next_range() {
                f(0, Gram::new(&doc[start..], end - start))?;
            }
            ControlFlow::Continue(())
        })
    }
}

/// n-grams of the tokens of `source()` joined with `joiner`: in output
/// order, one pass per width (each pass a fresh source), or all widths in
/// one pass, grouped by width, which for a document of `doc_len` bytes at
/// most [`SHORT_DOC`] is the output order too (see
/// [`TokenBuffer::emit_windows`]).
fn joined<S: TokenSource>(
    joiner: Option<u8>,
    doc_len: usize,
    widths: &[usize],
    order: Order,
    buffer: &mut TokenBuffer,
    f: &mut impl FnMut(usize, Gram<'_>) -> ControlFlow<()>,
    source: impl Fn() -> S,
) -> ControlFlow<()> {
    passes(widths, token_order(order, doc_len), |widths| {
        buffer.emit_windows(joiner, &mut source(), widths, f)
    })
}

/// How token n-grams of a document of `doc_len` bytes are formed for
/// `order`: in one pass whenever that gives the output order.
fn token_order(order: Order, doc_len: usize) -> Order {
    if doc_len <= SHORT_DOC {
        Order::OnePass
    } else {
        order
    }
}

/// Runs `pass` on `widths` in `order`: once on all of them, or once on
/// each in turn.
fn passes(
    widths: &[usize],
    order: Order,
    mut pass: impl FnMut(&[usize]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    match order {
        Order::OnePass => pass(widths),
        Order::Output => {
            for width in widths {
                pass(std::slice::from_ref(width))?;
            }
            ControlFlow::Continue(())
        }
    }
}
