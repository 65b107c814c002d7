//! A chunk's rows as the kernels read them (the bridge's `Part`).

use crate::bridge::{ffi, status_of};
use rustfx::output::{Batch, Values};
use rustfx::Error;

/// A chunk's rows, which the kernel reads and copies out, and the error of
/// its first file that could not be read, if it must fail the op.
pub struct Part {
    pub(crate) batch: Batch,
    failed: Option<(usize, Error)>,
}

impl Part {
    pub(crate) fn new(batch: Batch) -> Part {
        Part {
            batch,
            failed: None,
        }
    }

    pub(crate) fn failing(batch: Batch, failed: Option<(usize, Error)>) -> Part {
        Part { batch, failed }
    }

    pub(crate) fn row_ends(&self) -> &[i64] {
        self.batch.offsets().map_or(&[], |offsets| offsets.ends())
    }

    pub(crate) fn value_count(&self) -> usize {
        self.batch.values().len()
    }

    pub(crate) fn value_bytes(&self) -> &[u8] {
        self.batch.values().as_bytes()
    }

    pub(crate) fn string_ends(&self) -> &[i64] {
        match self.batch.values() {
            Values::String(strings) => strings.offsets.ends(),
            _ => &[],
        }
    }

    pub(crate) fn indices(&self) -> &[u64] {
        match &self.batch {
            Batch::Sparse { indices, .. } => indices,
            _ => &[],
        }
    }

    pub(crate) fn error(&self) -> ffi::Status {
        status_of(match &self.failed {
            Some((_, e)) => Err(e.clone()),
            None => Ok(()),
        })
    }

    pub(crate) fn error_row(&self) -> usize {
        self.failed.as_ref().map_or(0, |(row, _)| *row)
    }
}
