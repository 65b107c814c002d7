//! One document's row as the cache stores it, and back.
//!
//! A [`StoredRow`] is a row of a [`Batch`] taken apart into what SQLite
//! holds: the layout and dtype (their names), the width, the values as
//! native-endian bytes ([`Values::as_bytes`]) and one auxiliary column of
//! little-endian `u64`s (where each string ends, for string rows; the
//! column indices, for sparse rows; empty otherwise). Its checksum covers
//! every one of those and the entry's key, so a changed byte anywhere, or a
//! row moved under another key, is found ([`StoredRow::checksum`]).
//!
//! Rows found in the cache and rows extracted now are put back together by
//! the same function ([`assemble`]), so a batch that mixes both is built
//! exactly as one of either kind.

use rustfx::hashing::fingerprint64;
use rustfx::output::{Batch, DType, Layout, Offsets, OutputSpec, Strings, Values};

/// One document's row, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoredRow {
    pub layout: Layout,
    pub dtype: DType,
    /// Dense and sparse rows: the width; ragged rows: -1.
    pub width: i64,
    /// The row's values as bytes (strings: their bytes end to end).
    pub values: Vec<u8>,
    /// Little-endian u64s: string ends (from 0) or sparse column indices.
    pub aux: Vec<u8>,
}

/// Little-endian bytes of `values`.
fn u64_bytes(values: impl IntoIterator<Item = u64>) -> Vec<u8> {
    values.into_iter().flat_map(u64::to_le_bytes).collect()
}

/// `bytes` as little-endian u64s; `None` if not a whole number of them.
fn u64s(bytes: &[u8]) -> Option<Vec<u64>> {
    if !bytes.len().is_multiple_of(8) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect(),
    )
}

impl StoredRow {
    /// Row `i` of `batch`.
    pub fn of(batch: &Batch, i: usize) -> StoredRow {
        let values = batch.values();
        let dtype = values.dtype();
        let size = dtype.size().unwrap_or(1);
        let bytes = values.as_bytes();
        let (width, range) = match batch {
            Batch::Dense { width, .. } => (*width as i64, i * width..(i + 1) * width),
            Batch::Ragged { offsets, .. } => (-1, offsets.range(i)),
            Batch::Sparse { width, offsets, .. } => (*width as i64, offsets.range(i)),
        };
        let (values, aux) = match (batch, values) {
            (_, Values::String(strings)) => {
                // The strings of the row, their ends counted from the row's
                // first byte (the stored form: u64 ends, one per string).
                let offsets = strings.offsets.as_slice();
                let (first, last) = (offsets[range.start], offsets[range.end]);
                let ends = offsets[range.start + 1..=range.end]
                    .iter()
                    .map(|&end| (end - first) as u64);
                (
                    strings.bytes[first as usize..last as usize].to_vec(),
                    u64_bytes(ends),
                )
            }
            (Batch::Sparse { indices, .. }, _) => (
                bytes[range.start * size..range.end * size].to_vec(),
                u64_bytes(indices[range].iter().copied()),
            ),
            _ => (
                bytes[range.start * size..range.end * size].to_vec(),
                Vec::new(),
            ),
        };
        StoredRow {
            layout: batch.layout(),
            dtype,
            width,
            values,
            aux,
        }
    }

    /// The 64-bit checksum of the row stored under `spec_digest` and
    /// `doc_key`: Fingerprint64 (the core's FarmHash, `rustfx::hashing`) of
    /// the values, of the auxiliary column, and of a header of the key, the
    /// layout, dtype, width and those two lengths, combined by a
    /// Fingerprint64 of the three. A check against damage (a flipped bit, a
    /// torn or edited record), not against someone who can write the file:
    /// SHA-256 took 7 µs of a 10 KB EMBER2024 row, a third of a lookup.
    pub fn checksum(&self, spec_digest: &[u8], doc_key: &[u8]) -> i64 {
        let mut header = Vec::with_capacity(128);
        let lengths = [self.values.len() as u64, self.aux.len() as u64].map(u64::to_le_bytes);
        self.each_field(spec_digest, doc_key, &lengths, |b| {
            header.extend_from_slice(b)
        });
        let parts = [
            fingerprint64(&header),
            fingerprint64(&self.values),
            fingerprint64(&self.aux),
        ];
        fingerprint64(bytemuck::cast_slice(&parts)) as i64
    }

    /// Gives `feed` the key, the layout, dtype and width, then `tail`, each
    /// as its length (u64, little-endian) and its bytes: what both the
    /// checksum and the digest cover.
    fn each_field<T: AsRef<[u8]>>(
        &self,
        spec_digest: &[u8],
        doc_key: &[u8],
        tail: &[T],
        mut feed: impl FnMut(&[u8]),
    ) {
        let width = self.width.to_le_bytes();
        let head: [&[u8]; 5] = [
            spec_digest,
            doc_key,
            self.layout.name().as_bytes(),
            self.dtype.name().as_bytes(),
            &width,
        ];
        for part in head.into_iter().chain(tail.iter().map(AsRef::as_ref)) {
            feed(&(part.len() as u64).to_le_bytes());
            feed(part);
        }
    }

    /// The row's digest under `spec_digest` and `doc_key`: a BLAKE3 (its
    /// key derivation mode, [`ROW_DIGEST_CONTEXT`]) of the same fields as
    /// [`StoredRow::checksum`]. A corpus job writes it beside each row and
    /// `fill_from_corpus` checks it before storing the row: a shard changed
    /// after it was written (an edited value or content key, bit rot) is
    /// refused. Like the checksum, it finds damage, not a forger who can run
    /// rustfx: whoever can write a shard can write the cache's directory.
    pub fn digest(&self, spec_digest: &[u8], doc_key: &[u8]) -> [u8; 32] {
        let mut hasher = blake3::Hasher::new_derive_key(ROW_DIGEST_CONTEXT);
        self.each_field(spec_digest, doc_key, &[&self.values, &self.aux], |b| {
            hasher.update(b);
        });
        *hasher.finalize().as_bytes()
    }

    /// The bytes this entry counts against the cache's cap: its values,
    /// its auxiliary column and [`ENTRY_OVERHEAD`].
    pub fn size(&self) -> u64 {
        (self.values.len() + self.aux.len()) as u64 + ENTRY_OVERHEAD
    }

    /// Whether the row has the shape `output` says (layout, dtype, width,
    /// and a consistent length); what a row read back must pass besides
    /// its checksum.
    pub fn fits(&self, output: OutputSpec) -> bool {
        let width = output.width.map_or(-1, |w| w as i64);
        if (self.layout, self.dtype, self.width) != (output.layout, output.dtype, width) {
            return false;
        }
        let Some(aux) = u64s(&self.aux) else {
            return false;
        };
        match (self.layout, self.dtype.size()) {
            (_, None) => {
                aux.windows(2).all(|w| w[0] <= w[1])
                    && aux.last().copied().unwrap_or(0) == self.values.len() as u64
            }
            (Layout::Dense, Some(size)) => {
                aux.is_empty() && self.values.len() == self.width as usize * size
            }
            (Layout::Ragged, Some(size)) => {
                aux.is_empty() && self.values.len().is_multiple_of(size)
            }
            (Layout::Sparse, Some(size)) => {
                self.values.len() == aux.len() * size
                    && aux.windows(2).all(|w| w[0] < w[1])
                    && aux.last().is_none_or(|&last| last < self.width as u64)
            }
        }
    }
}

/// The BLAKE3 key-derivation context of [`StoredRow::digest`]; a new
/// definition of the digest takes a new context.
pub const ROW_DIGEST_CONTEXT: &str = "rustfx-cache row digest 1";

/// What each entry counts beyond its values: its two 32-byte keys, the
/// other columns, and SQLite's row and index overhead, roughly.
pub const ENTRY_OVERHEAD: u64 = 160;

/// The batch of `rows` (each of which [`StoredRow::fits`] `output`), in
/// order.
pub(crate) fn assemble<'a>(
    output: OutputSpec,
    rows: impl IntoIterator<Item = &'a StoredRow>,
) -> Batch {
    let rows: Vec<&StoredRow> = rows.into_iter().collect();
    // Every buffer allocated once at its final size: a batch of hits is
    // all copying, and a buffer grown by doubling (then copied into one
    // of the dtype) made the heap grow and shrink at every batch, a third
    // of a single-threaded hit's time in page faults.
    let total: usize = rows.iter().map(|r| r.values.len()).sum();
    let total_aux: usize = rows.iter().map(|r| r.aux.len() / 8).sum();
    let mut aux: Vec<u64> = Vec::with_capacity(total_aux);
    let mut offsets = Offsets::with_capacity(rows.len());
    let size = output.dtype.size();
    let mut base = 0usize;
    for row in &rows {
        let row_aux = u64s(&row.aux).unwrap_or_default();
        match size {
            // String ends are counted from the row's first byte.
            None => aux.extend(row_aux.iter().map(|end| end + base as u64)),
            Some(_) => aux.extend(row_aux),
        }
        base += row.values.len();
        offsets.push(match size {
            None => aux.len(),
            Some(size) => base / size,
        });
    }
    let values = match size {
        None => {
            let mut bytes = Vec::with_capacity(total);
            for row in &rows {
                bytes.extend_from_slice(&row.values);
            }
            // Each stored row's string ends are checked against its bytes
            // (`StoredRow::fits`), so they never go back.
            let mut strings = Strings {
                bytes,
                offsets: Offsets::with_capacity(aux.len()),
            };
            aux.iter()
                .for_each(|&end| strings.offsets.push(end as usize));
            Values::String(strings)
        }
        Some(_) => concatenated_values(output.dtype, &rows, total)
            .unwrap_or_else(|| Values::empty(output.dtype)),
    };
    let width = output.width.unwrap_or(0);
    match output.layout {
        Layout::Dense => Batch::Dense {
            rows: offsets.rows(),
            width,
            values,
        },
        Layout::Ragged => Batch::Ragged { values, offsets },
        Layout::Sparse => Batch::Sparse {
            width,
            indices: aux,
            values,
            offsets,
        },
    }
}

/// The numeric values of `rows` (of `dtype`, `total` bytes in all) end to
/// end, copied once into a vector of the dtype; `None` for strings or a
/// length that is not a whole number of values.
fn concatenated_values(dtype: DType, rows: &[&StoredRow], total: usize) -> Option<Values> {
    macro_rules! concatenated {
        ($($variant:ident $t:ty),+) => {
            match dtype {
                $(DType::$variant => {
                    let size = std::mem::size_of::<$t>();
                    (total % size == 0).then(|| {
                        // Not zeroed first (a zeroed vector this size is
                        // fresh pages from the system at every batch).
                        let mut values: Vec<$t> = Vec::with_capacity(total / size);
                        for row in rows {
                            values.extend(
                                row.values.chunks_exact(size).map(bytemuck::pod_read_unaligned::<$t>),
                            );
                        }
                        Values::$variant(values)
                    })
                })+
                DType::String => None,
            }
        };
    }
    rustfx::numeric_dtypes!(concatenated)
}

/// The layout of a stored name, for rows read back.
pub(crate) fn layout_named(name: &str) -> Option<Layout> {
    Layout::from_name(name).ok()
}

/// The dtype of a stored name, for rows read back.
pub(crate) fn dtype_named(name: &str) -> Option<DType> {
    DType::from_name(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustfx::spec::FeatureSpec;

    /// Every registry example: the rows taken apart and assembled again
    /// are the batch, bit for bit, and each fits the spec's output.
    #[test]
    fn rows_round_trip_for_every_registry_example() {
        let docs: [&[u8]; 4] = [
            b"MZ\x90\0 hello world http://a.b",
            b"",
            b"aaaa bbbb \xff",
            b"x",
        ];
        for entry in rustfx::registry::EXTRACTORS {
            for params in entry.examples {
                let text = format!(r#"{{"extractor": "{}", "params": {params}}}"#, entry.name);
                let spec = FeatureSpec::from_json(&text).unwrap();
                let batch = spec.build().unwrap().extract_batch(&docs).unwrap();
                let rows: Vec<StoredRow> =
                    (0..docs.len()).map(|i| StoredRow::of(&batch, i)).collect();
                assert!(rows.iter().all(|r| r.fits(spec.output())), "{text}");
                let again = assemble(spec.output(), rows.iter());
                assert!(again.same_bits(&batch), "{text}");
                let one = assemble(spec.output(), rows[2..3].iter());
                let alone = spec.build().unwrap().extract_batch(&docs[2..3]).unwrap();
                assert!(one.same_bits(&alone), "{text}");
            }
        }
    }

    #[test]
    fn the_checksum_covers_every_field_and_the_key() {
        let row = StoredRow {
            layout: Layout::Dense,
            dtype: DType::Float32,
            width: 2,
            values: vec![0; 8],
            aux: Vec::new(),
        };
        let sum = row.checksum(&[1; 32], &[2; 32]);
        assert_ne!(sum, row.checksum(&[1; 32], &[3; 32]));
        assert_ne!(sum, row.checksum(&[4; 32], &[2; 32]));
        let mut flipped = row.clone();
        flipped.values[5] ^= 1;
        assert_ne!(sum, flipped.checksum(&[1; 32], &[2; 32]));
        let mut other = row.clone();
        other.dtype = DType::Int32;
        assert_ne!(sum, other.checksum(&[1; 32], &[2; 32]));
    }

    /// The row digest covers the same as the checksum, and is BLAKE3's key
    /// derivation of the length-prefixed fields (the definition, written
    /// out here from blake3's own API).
    #[test]
    fn the_row_digest_covers_every_field_and_the_key() {
        let row = StoredRow {
            layout: Layout::Sparse,
            dtype: DType::Float32,
            width: 9,
            values: vec![0, 0, 128, 63],
            aux: 7u64.to_le_bytes().to_vec(),
        };
        let digest = row.digest(&[1; 32], &[2; 32]);
        let mut fields = Vec::new();
        for part in [
            &[1u8; 32][..],
            &[2; 32],
            b"sparse",
            b"float32",
            &9i64.to_le_bytes(),
            &[0, 0, 128, 63],
            &7u64.to_le_bytes(),
        ] {
            fields.extend_from_slice(&(part.len() as u64).to_le_bytes());
            fields.extend_from_slice(part);
        }
        assert_eq!(digest, blake3::derive_key(ROW_DIGEST_CONTEXT, &fields));
        assert_ne!(digest, row.digest(&[1; 32], &[3; 32]));
        assert_ne!(digest, row.digest(&[4; 32], &[2; 32]));
        let mut flipped = row.clone();
        flipped.values[0] ^= 1;
        assert_ne!(digest, flipped.digest(&[1; 32], &[2; 32]));
        let mut moved = row.clone();
        moved.aux = 8u64.to_le_bytes().to_vec();
        assert_ne!(digest, moved.digest(&[1; 32], &[2; 32]));
        let mut wider = row.clone();
        wider.width = 10;
        assert_ne!(digest, wider.digest(&[1; 32], &[2; 32]));
    }
}
