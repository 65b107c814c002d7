//! Token boundaries of byte-classified text, 64 bytes at a time.
//!
//! The whitespace and word tokenizers (and the ASCII fast paths of the
//! scikit-learn ones) split text on a class of separator bytes. Testing one
//! byte at a time costs a branch per byte; here each 64-byte block becomes a
//! `u64` mask of its separator bytes (a plain loop LLVM turns into vector
//! compares, then eight multiply-gathers of the byte flags into bits), and
//! the token edges of the block are the bits where the mask changes. Walking
//! the edges with `trailing_zeros` costs per token, not per byte.
//!
//! [`AsciiTokens`] yields token ranges lazily, so a caller that stops early
//! (a sequence of the first ids) never classifies the rest of the document.
//! [`ascii_lowercase_chunk`] lowercases the 16-byte chunks tokens are copied
//! in, the same way: all lanes at once, no branch per byte.

/// Bytes that separate tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ByteClass {
    /// `tf.strings.split`'s whitespace: `" \t\n\v\f\r"`.
    Whitespace,
    /// Everything but `[A-Za-z0-9_]` (also Python's `\w` on ASCII).
    NonWord,
    /// Python's `str.isspace()` on ASCII: `\t\n\v\f\r`, U+001C..U+001F, `' '`.
    PythonSpace,
}

impl ByteClass {
    /// Whether `b` separates tokens. Written without `||` so the block loop
    /// vectorizes (no short-circuit branches).
    #[inline(always)]
    pub(super) fn is_separator(self, b: u8) -> bool {
        match self {
            ByteClass::Whitespace => (b == b' ') | (b.wrapping_sub(b'\t') <= b'\r' - b'\t'),
            ByteClass::NonWord => {
                let word = ((b | 0x20).wrapping_sub(b'a') <= b'z' - b'a')
                    | (b.wrapping_sub(b'0') <= 9)
                    | (b == b'_');
                !word
            }
            ByteClass::PythonSpace => {
                (b.wrapping_sub(b'\t') <= b'\r' - b'\t') | (b.wrapping_sub(0x1c) <= b' ' - 0x1c)
            }
        }
    }

    /// Bit `i` set when `block[i]` is a separator.
    #[inline]
    pub(super) fn mask(self, block: &[u8; 64]) -> u64 {
        // One `match` per block, so each arm is its own vectorized loop.
        match self {
            ByteClass::Whitespace => mask_of(block, |b| ByteClass::Whitespace.is_separator(b)),
            ByteClass::NonWord => mask_of(block, |b| ByteClass::NonWord.is_separator(b)),
            ByteClass::PythonSpace => mask_of(block, |b| ByteClass::PythonSpace.is_separator(b)),
        }
    }
}

/// Bit `i` set when `is_set(block[i])`: first a byte flag per byte (0x80 or
/// 0, a loop LLVM vectorizes), then each 8 flags gathered into 8 bits by one
/// multiply (the high bit of byte `j` lands on bit `56 + j`).
#[inline(always)]
fn mask_of(block: &[u8; 64], is_set: impl Fn(u8) -> bool) -> u64 {
    let mut flags = [0u8; 64];
    for (flag, &b) in flags.iter_mut().zip(block) {
        *flag = if is_set(b) { 0x80 } else { 0 };
    }
    let mut mask = 0u64;
    for (k, word) in flags.chunks_exact(8).enumerate() {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let word = u64::from_le_bytes(bytes);
        let bits = (word & 0x8080_8080_8080_8080).wrapping_mul(0x0002_0408_1020_4081) >> 56;
        mask |= bits << (8 * k);
    }
    mask
}

/// `rest` (shorter than 64 bytes), then `pad`: the last block of a text.
#[inline]
pub(super) fn padded_block(rest: &[u8], pad: u8) -> [u8; 64] {
    let mut block = [pad; 64];
    block[..rest.len()].copy_from_slice(rest);
    block
}

/// Bits of `block`'s bytes beyond ASCII, and of those that can lead a
/// UTF-8 character of 2-4 bytes (0xC2..=0xF4). Zeros after the document
/// are neither.
#[inline]
pub(super) fn non_ascii_masks(block: &[u8; 64]) -> (u64, u64) {
    (
        mask_of(block, |b| b >= 0x80),
        mask_of(block, |b| b.wrapping_sub(0xc2) <= 0xf4 - 0xc2),
    )
}

/// The maximal runs of non-separator bytes of `text`, as `(start, end)`
/// ranges, in order.
///
/// Each block's edges are first written out as positions (eight at a time,
/// without a branch per edge) and then handed out in pairs: the branches
/// left are one per block, not one per token, which matters because token
/// lengths are unpredictable.
#[derive(Clone, Debug)]
pub(super) struct AsciiTokens<'a> {
    text: &'a [u8],
    class: ByteClass,
    /// Whether runs of one byte are dropped in the masks (`min_len` 2).
    pairs: bool,
    /// Edge positions not yet handed out: `edges[taken..len]`. An edge is a
    /// byte whose class differs from the byte before it; they alternate
    /// token start, token end.
    edges: [usize; EDGES],
    taken: usize,
    len: usize,
    /// 1 when the last byte classified is a separator (the byte before the
    /// text counts as one).
    carry: u64,
    /// Offset of the next block to classify.
    next: usize,
}

/// Edges gathered per refill (at least): several blocks' worth, so the
/// refill's cost is shared by many tokens.
const REFILL_EDGES: usize = 32;
/// Room for `REFILL_EDGES - 1` edges, a block's 64 more, and the up to 7
/// positions the unrolled writes put past the last edge.
const EDGES: usize = REFILL_EDGES - 1 + 64 + 8;

impl<'a> AsciiTokens<'a> {
    /// The runs of `text` at least `min_len` (1 or 2) bytes long. Runs of
    /// one byte are dropped in each block's mask, not one token at a time:
    /// in binary input most runs of word bytes are one byte long, and a
    /// test per run missed one in four.
    pub(super) fn new(text: &'a [u8], class: ByteClass, min_len: usize) -> Self {
        assert!(matches!(min_len, 1 | 2), "min_len must be 1 or 2");
        AsciiTokens {
            text,
            class,
            pairs: min_len == 2,
            edges: [0; EDGES],
            taken: 0,
            len: 0,
            carry: 1,
            next: 0,
        }
    }

    /// Starts over on `text`, with the same class and `min_len` (no
    /// 800-byte edge array to clear, as a new one would).
    pub(super) fn reset(&mut self, text: &'a [u8]) {
        (self.text, self.taken, self.len, self.carry, self.next) = (text, 0, 0, 1, 0);
    }

    /// The text being split.
    pub(super) fn text(&self) -> &'a [u8] {
        self.text
    }

    /// Classifies blocks until at least [`REFILL_EDGES`] edges are pending,
    /// or the text ends (then the last token, if open, ends at
    /// `text.len()`).
    fn refill(&mut self) {
        // At most one edge is left: the start of a token still open (edges
        // are taken in pairs and `len` is even except after such a start).
        if self.taken < self.len {
            self.edges[0] = self.edges[self.taken];
            self.len = 1;
        } else {
            self.len = 0;
        }
        self.taken = 0;
        while self.len < REFILL_EDGES {
            let Some(rest) = self.text.get(self.next..).filter(|r| !r.is_empty()) else {
                if self.len % 2 == 1 {
                    self.edges[self.len] = self.text.len();
                    self.len += 1;
                }
                return;
            };
            let mut separators = match rest.first_chunk::<64>() {
                Some(block) => self.class.mask(block),
                // The tail, padded with separators: a token running to the
                // end of the text gets its end edge at `text.len()`.
                None => self.tail_mask(rest.len()),
            };
            if self.pairs {
                // A byte between two separators is one too. (`carry` may
                // already count such a byte as a separator: then the byte
                // after it is one anyway. After the text comes one.)
                let next = rest
                    .get(64)
                    .map_or(1, |&b| u64::from(self.class.is_separator(b)));
                let before = (separators << 1) | self.carry;
                let after = (separators >> 1) | (next << 63);
                separators |= before & after;
            }
            let mut edges = separators ^ ((separators << 1) | self.carry);
            self.carry = separators >> 63;
            let count = edges.count_ones() as usize;
            let base = self.next;
            // Eight writes per round whatever the count; the extra ones
            // (position `base + 64`) land past `len` and are never read.
            let mut at = self.len;
            while at < self.len + count {
                for slot in &mut self.edges[at..at + 8] {
                    *slot = base + edges.trailing_zeros() as usize;
                    edges &= edges.wrapping_sub(1);
                }
                at += 8;
            }
            self.len += count;
            self.next += 64;
        }
    }
}

impl AsciiTokens<'_> {
    /// The separators of the text's last `rest` bytes (fewer than 64),
    /// then separators. From loads inside the text, never from a copy: a
    /// tail copied into a padded block was loaded back before the copy's
    /// stores had landed, a store-forwarding stall (and two library calls)
    /// on every short record.
    fn tail_mask(&self, rest: usize) -> u64 {
        let text = self.text;
        let pad = !0u64 << rest;
        if let Some(last) = text.last_chunk::<64>() {
            // `64 - rest` bytes of `last` come before the tail.
            return self.class.mask(last) >> (64 - rest) | pad;
        }
        // The text is shorter than a block, so it is the tail: a block of
        // its 16-byte chunks, each from a load that ends inside the text,
        // shifted into place (one 16-byte store per chunk, which the mask's
        // 16-byte loads read back at once).
        let len = text.len();
        let mut block = [0u8; 64];
        if len < CHUNK {
            block[..CHUNK].copy_from_slice(&short_chunk(text));
        } else {
            for (k, out) in block.chunks_exact_mut(CHUNK).enumerate() {
                let at = (k * CHUNK).min(len - CHUNK);
                if let Some(&chunk) = text.get(at..).and_then(<[u8]>::first_chunk::<CHUNK>) {
                    let bytes = u128::from_le_bytes(chunk)
                        .checked_shr(8 * (k * CHUNK - at) as u32)
                        .unwrap_or(0);
                    out.copy_from_slice(&bytes.to_le_bytes());
                }
            }
        }
        self.class.mask(&block) | pad
    }
}

/// `text` (shorter than `CHUNK`), then zeros: from two loads that overlap
/// where they hold the same bytes, not a copy of variable length.
fn short_chunk(text: &[u8]) -> Chunk {
    let n = text.len();
    let bytes = if let (Some(&head), Some(&tail)) =
        (text.first_chunk::<8>(), text.last_chunk::<8>())
    {
        u128::from(u64::from_le_bytes(head)) | u128::from(u64::from_le_bytes(tail)) << (8 * (n - 8))
    } else if let (Some(&head), Some(&tail)) = (text.first_chunk::<4>(), text.last_chunk::<4>()) {
        u128::from(u32::from_le_bytes(head)) | u128::from(u32::from_le_bytes(tail)) << (8 * (n - 4))
    } else {
        text.iter()
            .rev()
            .fold(0u128, |bytes, &b| bytes << 8 | u128::from(b))
    };
    bytes.to_le_bytes()
}

impl Iterator for AsciiTokens<'_> {
    type Item = (usize, usize);

    #[inline]
    fn next(&mut self) -> Option<(usize, usize)> {
        if self.taken + 2 > self.len {
            self.refill();
            if self.len < 2 {
                return None;
            }
        }
        let token = (self.edges[self.taken], self.edges[self.taken + 1]);
        self.taken += 2;
        Some(token)
    }
}

/// Bytes copied (and lowercased) as one block.
pub(super) const CHUNK: usize = 16;

/// `CHUNK` bytes, lowercased in a vector register and stored at once
/// (the joiner is then stored over the byte after the token). Building
/// them in memory instead (a 16-byte store, a 1-byte store into it, a
/// 16-byte load) stalls every token on store forwarding.
pub(super) type Chunk = [u8; CHUNK];

/// `chunk` ASCII-lowercased: each byte holding `'A'..='Z'` gets bit 5, all
/// lanes at once (a loop LLVM turns into a few vector instructions; as
/// arithmetic on a `u128` in two general registers, word ids with
/// `lowercase=True` ran 7% slower).
#[inline(always)]
pub(super) fn ascii_lowercase_chunk(mut chunk: Chunk) -> Chunk {
    for b in &mut chunk {
        *b |= u8::from(b.wrapping_sub(b'A') < 26) << 5;
    }
    chunk
}
