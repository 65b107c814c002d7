//! Extraction through the cache: documents given as bytes
//! ([`FeatureCache::extract`]) and files given as paths
//! ([`FeatureCache::extract_files`]), each row looked up, the misses
//! extracted and queued to be stored.
//!
//! A call's files are shared between its threads one file at a time, as
//! uncached extraction shares them: each thread takes the next file as it
//! frees up, reads it (content key: and hashes it) and adds it to a group
//! of its own, which it looks up in one read transaction once the group
//! holds [`GROUP_FILES`] files or, by content, [`GROUP_BYTES`]; then it
//! extracts the group's misses at once, while their contents are still in
//! the CPU's caches. So large files are looked up and extracted one by
//! one, and small ones in groups (a lookup costs as much as reading a few
//! small files). The kernels used to hand Rust chunks of eight files
//! whatever their sizes: a thread could be left with eight megabyte misses
//! while the other idled (docs/feature_cache.md, "The first epoch").
//! Read buffers are kept by each thread for its next files
//! (src/buffers.rs).

use crate::buffers::{read_reusing, reuse};
use crate::row::{assemble, StoredRow};
use crate::threads::FileThreads;
use crate::{spec_digest, CacheKey, DocKey, FeatureCache};
use rayon::prelude::*;
use rustfx::output::Batch;
use rustfx::spec::FeatureSpec;
use rustfx::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A thread's group is looked up once it holds this many files...
pub(crate) const GROUP_FILES: usize = 8;
/// ...or this many bytes of them (a file this large is looked up, and
/// extracted if missed, alone).
pub(crate) const GROUP_BYTES: u64 = 1 << 20;

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

/// One file of a group: its key (`None`: it could not be read or
/// stat'ed), its contents if read (the content key reads every file
/// first; the stat key only its misses), the read's error, and the bytes
/// it counts for in the group.
struct Pending {
    index: usize,
    key: Option<DocKey>,
    contents: Option<Vec<u8>>,
    error: Option<Error>,
    bytes: u64,
}

/// A row made for a path of the call: its index, the row and the path's
/// read error.
type Done = (usize, Arc<StoredRow>, Option<Error>);

/// One call of [`FeatureCache::extract_files_on`]: its files, the next one
/// to take, and what its threads made.
struct FilesCall<'a> {
    cache: &'a FeatureCache,
    spec: &'a PreparedSpec,
    paths: &'a [&'a [u8]],
    max_bytes: u64,
    next: AtomicUsize,
    done: Mutex<Vec<Done>>,
    /// An extraction that failed (a bug in rustfx): the call's error.
    failed: Mutex<Option<Error>>,
}

impl FeatureCache {
    /// `spec`'s rows of `docs`, as `spec.build()?.extract_batch(docs)` gives
    /// them, bit for bit: each document hashed (on rayon's threads) and
    /// looked up by its content, the misses extracted in one batch and
    /// queued to be stored.
    pub fn extract(&self, spec: &FeatureSpec, docs: &[&[u8]]) -> Result<Batch> {
        let spec = PreparedSpec::new(spec.clone());
        let output = spec.spec.output();
        let keys: Vec<DocKey> = docs.par_iter().map(|d| DocKey::of_content(d)).collect();
        let found = self.lookup_or_miss(&spec.digest, output, &keys);
        let mut rows: Vec<Option<Arc<StoredRow>>> =
            found.into_iter().map(|row| row.map(Arc::new)).collect();
        let missing: Vec<usize> = (0..docs.len()).filter(|&i| rows[i].is_none()).collect();
        if missing.is_empty() {
            return Ok(assemble(output, rows.iter().flatten().map(|r| &**r)));
        }
        let misses: Vec<&[u8]> = missing.iter().map(|&i| docs[i]).collect();
        let fresh = self
            .extractor(&spec.digest, &spec.spec)?
            .extract_batch(&misses)?;
        let mut to_store = Vec::with_capacity(missing.len());
        for (j, &i) in missing.iter().enumerate() {
            let row = Arc::new(StoredRow::of(&fresh, j));
            to_store.push((keys[i], row.clone()));
            rows[i] = Some(row);
        }
        self.queue_rows(&spec.digest, to_store);
        if missing.len() == docs.len() {
            return Ok(fresh);
        }
        Ok(assemble(output, rows.iter().flatten().map(|r| &**r)))
    }

    /// `spec`'s rows of the files at `paths`, each read by the core's rules
    /// (`rustfx::read::read_file`: at most `max_bytes`, symlinks followed):
    /// what extracting the contents read gives, bit for bit. A file that
    /// cannot be read is an empty document, its error in
    /// [`FilesBatch::errors`], and never stored. With [`CacheKey::Content`]
    /// every file is read and hashed; with [`CacheKey::Stat`] only the
    /// misses are read, and a file whose metadata changed while it was
    /// read is extracted but not stored. On rayon's threads.
    pub fn extract_files(
        &self,
        spec: &FeatureSpec,
        paths: &[&[u8]],
        max_bytes: u64,
    ) -> Result<FilesBatch> {
        let spec = PreparedSpec::new(spec.clone());
        self.extract_files_on(&spec, paths, max_bytes, &crate::threads::RayonThreads)
    }

    /// [`extract_files`](Self::extract_files) of a prepared spec on
    /// `threads` (an op's kernel: its own pool).
    pub fn extract_files_on(
        &self,
        spec: &PreparedSpec,
        paths: &[&[u8]],
        max_bytes: u64,
        threads: &dyn FileThreads,
    ) -> Result<FilesBatch> {
        let call = FilesCall {
            cache: self,
            spec,
            paths,
            max_bytes,
            next: AtomicUsize::new(0),
            done: Mutex::new(Vec::with_capacity(paths.len())),
            failed: Mutex::new(None),
        };
        if !paths.is_empty() {
            threads.run(&|| call.run());
        }
        if let Some(e) = call.failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        let mut done = call.done.into_inner().unwrap_or_else(|p| p.into_inner());
        done.sort_unstable_by_key(|(i, _, _)| *i);
        if done.len() != paths.len() || done.iter().enumerate().any(|(i, d)| d.0 != i) {
            return Err(Error::new(
                rustfx::ErrorKind::Internal,
                "a file's row was lost (a bug in rustfx)",
            ));
        }
        let batch = assemble(spec.spec.output(), done.iter().map(|(_, row, _)| &**row));
        let errors = done.into_iter().map(|(_, _, error)| error).collect();
        Ok(FilesBatch { batch, errors })
    }
}

impl FilesCall<'_> {
    /// One thread's share: files taken in turn until none is left, in
    /// groups looked up and extracted as they fill.
    fn run(&self) {
        let mut group: Vec<Pending> = Vec::with_capacity(GROUP_FILES);
        let mut bytes = 0;
        let mut done: Vec<Done> = Vec::new();
        loop {
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(path) = self.paths.get(index) else {
                break;
            };
            let pending = self.probe(index, path);
            bytes += pending.bytes;
            group.push(pending);
            if group.len() >= GROUP_FILES || bytes >= GROUP_BYTES {
                self.settle(&mut group, &mut done);
                bytes = 0;
            }
        }
        self.settle(&mut group, &mut done);
        self.done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .append(&mut done);
    }

    /// The file at `path`: by content, read and hashed; by stat, its
    /// metadata only.
    fn probe(&self, index: usize, path: &[u8]) -> Pending {
        match self.cache.options.key {
            CacheKey::Content => match read_reusing(path, self.max_bytes) {
                Ok(contents) => Pending {
                    index,
                    key: Some(DocKey::of_content(&contents)),
                    bytes: contents.len() as u64,
                    contents: Some(contents),
                    error: None,
                },
                Err(e) => Pending {
                    index,
                    key: None,
                    contents: None,
                    error: Some(e),
                    bytes: 0,
                },
            },
            // A stat key's hit costs microseconds whatever the file's
            // size: its groups are by count alone.
            CacheKey::Stat => Pending {
                index,
                key: DocKey::of_file_stat(path, self.max_bytes).ok(),
                contents: None,
                error: None,
                bytes: 0,
            },
        }
    }

    /// Looks up `group` in one read transaction, extracts its misses in one
    /// batch, queues those to store and adds every row to `done`; empties
    /// the group, its read buffers kept for the next.
    fn settle(&self, group: &mut Vec<Pending>, done: &mut Vec<Done>) {
        if group.is_empty() {
            return;
        }
        let (digest, spec) = (&self.spec.digest, &self.spec.spec);
        let keyed: Vec<usize> = (0..group.len())
            .filter(|&g| group[g].key.is_some())
            .collect();
        let keys: Vec<DocKey> = keyed.iter().filter_map(|&g| group[g].key).collect();
        let mut found: Vec<Option<StoredRow>> = vec![None; group.len()];
        if !keys.is_empty() {
            let rows = self.cache.lookup_or_miss(digest, spec.output(), &keys);
            for (&g, row) in keyed.iter().zip(rows) {
                found[g] = row;
            }
        }
        let mut misses: Vec<usize> = Vec::new();
        for (g, row) in found.into_iter().enumerate() {
            match row {
                Some(row) => {
                    done.push((group[g].index, Arc::new(row), None));
                    reuse(group[g].contents.take());
                }
                None => misses.push(g),
            }
        }
        if !misses.is_empty() {
            self.extract_misses(group, &misses, done);
        }
        for pending in group.drain(..) {
            reuse(pending.contents);
        }
    }

    /// The rows of `group[g]` for every `g` in `misses`, extracted in one
    /// batch; those that may be stored are queued.
    fn extract_misses(&self, group: &mut [Pending], misses: &[usize], done: &mut Vec<Done>) {
        let store_by_stat = self.cache.options.key == CacheKey::Stat;
        let mut store = vec![false; misses.len()];
        for (j, &g) in misses.iter().enumerate() {
            let pending = &mut group[g];
            if store_by_stat {
                // Read now; changed while read: extracted, but not stored.
                let path = self.paths[pending.index];
                match read_reusing(path, self.max_bytes) {
                    Ok(contents) => pending.contents = Some(contents),
                    Err(e) => pending.error = Some(e),
                }
                let same = DocKey::of_file_stat(path, self.max_bytes).ok() == pending.key;
                store[j] = same && pending.key.is_some();
            } else {
                store[j] = pending.key.is_some();
            }
            store[j] &= pending.error.is_none();
        }
        let docs: Vec<&[u8]> = misses
            .iter()
            .map(|&g| group[g].contents.as_deref().unwrap_or(&[]))
            .collect();
        let extracted = self
            .cache
            .extractor(&self.spec.digest, &self.spec.spec)
            .and_then(|e| e.extract_batch(&docs));
        let fresh = match extracted {
            Ok(fresh) => fresh,
            Err(e) => {
                let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
                failed.get_or_insert(e);
                return;
            }
        };
        let mut to_store = Vec::with_capacity(misses.len());
        for (j, &g) in misses.iter().enumerate() {
            let row = Arc::new(StoredRow::of(&fresh, j));
            let pending = &mut group[g];
            match pending.key {
                Some(key) if store[j] => to_store.push((key, row.clone())),
                _ => {}
            }
            done.push((pending.index, row, pending.error.take()));
        }
        self.cache.queue_rows(&self.spec.digest, to_store);
    }
}
