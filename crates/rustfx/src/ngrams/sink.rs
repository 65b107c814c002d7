//! Where the buckets of a [`BucketStream`](super::hash::BucketStream) go:
//! any `FnMut(usize, Bucket)` (a slot of a row, a dense count), or the
//! ragged ids of [`NgramHasher::id_rows`](super::NgramHasher::id_rows)
//! ([`RowIds`]). Sparse counts are summed by a
//! [`CountScratch`](super::CountScratch) (`count`).

use super::hash::Bucket;

/// Where a [`BucketStream`](super::hash::BucketStream) hands its buckets,
/// each with its n-gram's tag: any `FnMut(usize, Bucket)`, or a struct
/// with more to do.
pub(super) trait BucketSink {
    fn put(&mut self, tag: usize, bucket: Bucket);

    /// A batch of Fingerprint64 buckets (sign +1), in order.
    #[inline(always)]
    fn put_batch(&mut self, tags: &[usize], indices: &[u64]) {
        put_each(self, tags, indices);
    }
}

/// [`BucketSink::put_batch`] a bucket at a time.
#[inline(always)]
fn put_each<S: BucketSink + ?Sized>(sink: &mut S, tags: &[usize], indices: &[u64]) {
    for (&tag, &index) in tags.iter().zip(indices) {
        sink.put(tag, Bucket { index, sign: 1 });
    }
}

impl<F: FnMut(usize, Bucket)> BucketSink for F {
    #[inline(always)]
    fn put(&mut self, tag: usize, bucket: Bucket) {
        self(tag, bucket)
    }
}

/// The ids of [`NgramHasher::append_rows`](super::NgramHasher::append_rows):
/// group 0's go straight to `ids`, the other groups' wait in `later` until
/// the stream has handed out their document's last id. Appending them then, rather than flushing the
/// stream at the end of the document, keeps one stream for a batch of
/// files too (a partial batch hashed per file cost 5% on 6 KB files).
pub(super) struct RowIds<'a> {
    ids: &'a mut Vec<i64>,
    later: &'a mut Vec<Vec<i64>>,
    /// Ids handed out, counted as `append_rows` counts the pushed ones.
    handed: usize,
    /// When `handed` reaches it, `later` is appended (`usize::MAX`: never).
    append_at: usize,
}

impl<'a> RowIds<'a> {
    pub(super) fn new(ids: &'a mut Vec<i64>, later: &'a mut Vec<Vec<i64>>) -> Self {
        let handed = ids.len();
        RowIds {
            ids,
            later,
            handed,
            append_at: usize::MAX,
        }
    }

    /// Whether groups wait to be appended.
    pub(super) fn appends_later(&self) -> bool {
        self.append_at != usize::MAX
    }

    /// Appends the waiting groups once `end` ids have been handed out
    /// (the end of their document), now if they have.
    pub(super) fn append_later_at(&mut self, end: usize) {
        self.append_at = end;
        if self.handed == end {
            self.append_later();
        }
    }

    fn append_later(&mut self) {
        for buffer in self.later.iter_mut() {
            self.ids.extend_from_slice(buffer);
            buffer.clear();
        }
        self.append_at = usize::MAX;
    }
}

impl BucketSink for RowIds<'_> {
    #[inline(always)]
    fn put(&mut self, group: usize, bucket: Bucket) {
        let id = bucket.index as i64;
        match group.checked_sub(1).and_then(|g| self.later.get_mut(g)) {
            Some(buffer) => buffer.push(id),
            None => self.ids.push(id),
        }
        self.handed += 1;
        if self.handed == self.append_at {
            self.append_later();
        }
    }

    /// A batch all of group 0 with no group waiting (short records) goes
    /// to `ids` in one extend.
    #[inline(always)]
    fn put_batch(&mut self, tags: &[usize], indices: &[u64]) {
        if self.append_at == usize::MAX && tags.iter().all(|&tag| tag == 0) {
            self.ids.extend(indices.iter().map(|&index| index as i64));
            self.handed += indices.len();
            return;
        }
        put_each(self, tags, indices);
    }
}
