//! Extraction through the cache: documents given as bytes
//! ([`FeatureCache::extract`]) and files given as paths
//! ([`FeatureCache::extract_files`]), each row looked up, the misses
//! extracted in one batch and queued to be stored.

use crate::row::{assemble, StoredRow};
use crate::{spec_digest, CacheKey, DocKey, FeatureCache};
use rayon::prelude::*;
use rustfx::output::Batch;
use rustfx::read::read_file;
use rustfx::spec::FeatureSpec;
use rustfx::{Error, Result};
use std::borrow::Cow;

/// The rows of [`FeatureCache::extract_files`]: one per path (an empty
/// document's for a file that could not be read), and each path's read
/// error.
#[derive(Debug)]
pub struct FilesBatch {
    /// One row per path.
    pub batch: Batch,
    /// `Some` for a path that could not be read (its row is an empty
    /// document's, never stored).
    pub errors: Vec<Option<Error>>,
}

/// A spec with its digest, for calls that repeat it (an op's kernel).
#[derive(Clone, Debug)]
pub struct PreparedSpec {
    spec: FeatureSpec,
    digest: [u8; 32],
}

impl PreparedSpec {
    /// `spec` and its digest ([`spec_digest`]).
    pub fn new(spec: FeatureSpec) -> PreparedSpec {
        let digest = spec_digest(&spec);
        PreparedSpec { spec, digest }
    }

    /// The spec.
    pub fn spec(&self) -> &FeatureSpec {
        &self.spec
    }
}

impl FeatureCache {
    /// `spec`'s rows of `docs`, as `spec.build()?.extract_batch(docs)` gives
    /// them, bit for bit: each document hashed (on rayon's threads) and
    /// looked up by its content, the misses extracted in one batch and
    /// queued to be stored.
    pub fn extract(&self, spec: &FeatureSpec, docs: &[&[u8]]) -> Result<Batch> {
        let keys: Vec<Option<DocKey>> = docs
            .par_iter()
            .map(|d| Some(DocKey::of_content(d)))
            .collect();
        let read = |i: usize| Read {
            contents: Cow::Borrowed(docs[i]),
            error: None,
            store: true,
        };
        self.extract_keyed(&PreparedSpec::new(spec.clone()), &keys, read)
            .map(|files| files.batch)
    }

    /// `spec`'s rows of the files at `paths`, each read by the core's rules
    /// (`rustfx::read::read_file`: at most `max_bytes`, symlinks followed):
    /// what extracting the contents read gives, bit for bit. A file that
    /// cannot be read is an empty document, its error in
    /// [`FilesBatch::errors`], and never stored. With [`CacheKey::Content`]
    /// every file is read and hashed (in parallel, on rayon's pool); with
    /// [`CacheKey::Stat`] only the misses are read, and a file whose
    /// metadata changed while it was read is extracted but not stored.
    pub fn extract_files(
        &self,
        spec: &FeatureSpec,
        paths: &[&[u8]],
        max_bytes: u64,
    ) -> Result<FilesBatch> {
        self.extract_files_prepared(&PreparedSpec::new(spec.clone()), paths, max_bytes, true)
    }

    /// [`extract_files`](Self::extract_files) of a prepared spec, the
    /// files read and hashed on rayon's pool if `parallel`, else on this
    /// thread (a caller that runs batches on threads of its own: an op's
    /// kernel).
    pub fn extract_files_prepared(
        &self,
        spec: &PreparedSpec,
        paths: &[&[u8]],
        max_bytes: u64,
        parallel: bool,
    ) -> Result<FilesBatch> {
        match self.options.key {
            CacheKey::Content if !parallel => {
                // A kernel's chunk (a few files): all read and hashed, one
                // lookup, the hits' contents dropped.
                let read: Vec<Result<Vec<u8>>> =
                    paths.iter().map(|p| read_file(p, max_bytes)).collect();
                let keys: Vec<Option<DocKey>> = read
                    .iter()
                    .map(|r| r.as_ref().ok().map(|c| DocKey::of_content(c)))
                    .collect();
                self.extract_keyed(spec, &keys, |i| match &read[i] {
                    Ok(contents) => Read::of(Ok(Cow::Borrowed(contents.as_slice())), true),
                    Err(e) => Read::of(Err(e.clone()), false),
                })
            }
            CacheKey::Content => {
                // Read, hashed and looked up one by one, on rayon's
                // threads: a hit's contents are dropped at once (holding a
                // batch of megabyte files until the lookup made a cached
                // epoch 2.5 times slower), a miss's are kept to extract.
                let output = spec.spec.output();
                let probe = |p: &&[u8]| match read_file(p, max_bytes) {
                    Ok(contents) => {
                        let key = DocKey::of_content(&contents);
                        let row = self
                            .lookup_or_miss(&spec.digest, output, std::slice::from_ref(&key))
                            .pop()
                            .flatten();
                        let kept = row.is_none().then_some(contents);
                        ((Ok(kept), row), Some(key))
                    }
                    Err(e) => ((Err(e), None), None),
                };
                let (probed, keys): (Vec<ProbedRow>, Vec<Option<DocKey>>) =
                    paths.par_iter().map(probe).unzip();
                let (read, found): (Vec<Probed>, Vec<Option<StoredRow>>) =
                    probed.into_iter().unzip();
                self.extract_found(spec, &keys, found, |i| match &read[i] {
                    Ok(Some(contents)) => Read::of(Ok(Cow::Borrowed(contents.as_slice())), true),
                    // A hit: found, so never read here.
                    Ok(None) => Read::of(Ok(Cow::Borrowed(&[][..])), false),
                    Err(e) => Read::of(Err(e.clone()), false),
                })
            }
            CacheKey::Stat => {
                let keys: Vec<Option<DocKey>> = paths
                    .iter()
                    .map(|p| DocKey::of_file_stat(p, max_bytes).ok())
                    .collect();
                self.extract_keyed(spec, &keys, |i| {
                    let contents = read_file(paths[i], max_bytes).map(Cow::Owned);
                    // Changed while read: extracted, but not stored.
                    let same = DocKey::of_file_stat(paths[i], max_bytes).ok() == keys[i];
                    Read::of(contents, same)
                })
            }
        }
    }

    /// Looks up the documents that have a key, then
    /// [`extract_found`](Self::extract_found).
    fn extract_keyed<'a>(
        &self,
        spec: &PreparedSpec,
        keys: &[Option<DocKey>],
        read: impl Fn(usize) -> Read<'a>,
    ) -> Result<FilesBatch> {
        let keyed: Vec<usize> = (0..keys.len()).filter(|&i| keys[i].is_some()).collect();
        let lookup_keys: Vec<DocKey> = keyed.iter().filter_map(|&i| keys[i]).collect();
        let mut rows: Vec<Option<StoredRow>> = vec![None; keys.len()];
        if !lookup_keys.is_empty() {
            let found = self.lookup_or_miss(&spec.digest, spec.spec.output(), &lookup_keys);
            for (i, row) in keyed.iter().zip(found) {
                rows[*i] = row;
            }
        }
        self.extract_found(spec, keys, rows, read)
    }

    /// With `rows` found for some documents: reads the others with
    /// `read(i)`, extracts them in one batch, queues those that have a key
    /// and that `read` says to store, and assembles every row in order.
    fn extract_found<'a>(
        &self,
        spec: &PreparedSpec,
        keys: &[Option<DocKey>],
        mut rows: Vec<Option<StoredRow>>,
        read: impl Fn(usize) -> Read<'a>,
    ) -> Result<FilesBatch> {
        let digest = &spec.digest;
        let output = spec.spec.output();
        let mut errors: Vec<Option<Error>> = vec![None; keys.len()];
        let missing: Vec<usize> = (0..keys.len()).filter(|&i| rows[i].is_none()).collect();
        if missing.is_empty() {
            let batch = assemble(output, rows.iter().flatten());
            return Ok(FilesBatch { batch, errors });
        }
        let reads: Vec<Read> = missing.iter().map(|&i| read(i)).collect();
        let docs: Vec<&[u8]> = reads.iter().map(|r| r.contents.as_ref()).collect();
        let fresh = self.extractor(digest, &spec.spec)?.extract_batch(&docs)?;
        let mut to_store = Vec::new();
        for ((j, &i), read) in missing.iter().enumerate().zip(reads) {
            let row = StoredRow::of(&fresh, j);
            match (keys[i], read.store && read.error.is_none()) {
                (Some(key), true) => to_store.push((key, row.clone())),
                _ => errors[i] = read.error,
            }
            rows[i] = Some(row);
        }
        self.queue_rows(digest, to_store);
        let batch = if missing.len() == keys.len() {
            fresh
        } else {
            assemble(output, rows.iter().flatten())
        };
        Ok(FilesBatch { batch, errors })
    }
}

/// A file read and probed for [`FeatureCache::extract_files`]: its
/// contents if it was not stored, `None` if it was, or the read's error.
type Probed = Result<Option<Vec<u8>>>;

/// A file probed, and its row if it was found.
type ProbedRow = (Probed, Option<StoredRow>);

/// A document read for extraction: its contents (empty if the read
/// failed), the read's error, and whether its row may be stored.
struct Read<'a> {
    contents: Cow<'a, [u8]>,
    error: Option<Error>,
    store: bool,
}

impl<'a> Read<'a> {
    fn of(contents: Result<Cow<'a, [u8]>>, store: bool) -> Read<'a> {
        match contents {
            Ok(contents) => Read {
                contents,
                error: None,
                store,
            },
            Err(e) => Read {
                contents: Cow::Borrowed(&[]),
                error: Some(e),
                store: false,
            },
        }
    }
}
