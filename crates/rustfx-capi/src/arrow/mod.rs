//! The Arrow C Data Interface (arrow.apache.org/docs/format/CDataInterface.html):
//! the one form in which rows leave the core ([`export`]) and documents and
//! rows come in ([`import`]).
//!
//! The three structs are written here rather than taken from arrow-rs
//! (`arrow-data` with `ffi`): they are the spec's C declarations, about 40
//! lines, and the core needs no array type of arrow-rs around them (its
//! [`Batch`](rustfx::output::Batch) already is Arrow's layout). Taking
//! arrow-rs would add its crates to the wheel, the aarch64 cross-build and
//! every build (BUILD_NOTES.md, "Arrow C Data").
//!
//! Ownership is the spec's: whoever holds a struct calls its `release`
//! once, and the producer's `private_data` frees what it holds. Python
//! wraps exported structs in PyCapsules ("arrow_schema", "arrow_array")
//! whose destructor is [`rustfx_arrow_capsule_free`]: it calls `release`
//! if the consumer did not move the struct out, then frees the struct.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

pub mod export;
pub mod import;

/// The spec's `ArrowSchema`.
#[repr(C)]
pub struct ArrowSchema {
    /// The type, as the spec's format string.
    pub format: *const c_char,
    /// The field's name.
    pub name: *const c_char,
    /// Key-value pairs, in the spec's binary encoding (or null).
    pub metadata: *const c_char,
    /// `ARROW_FLAG_*`.
    pub flags: i64,
    /// How many children.
    pub n_children: i64,
    /// The children.
    pub children: *mut *mut ArrowSchema,
    /// Dictionary values (unused here: null).
    pub dictionary: *mut ArrowSchema,
    /// Frees what the struct holds; null once released or moved.
    pub release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    /// The producer's.
    pub private_data: *mut c_void,
}

/// The spec's `ArrowArray`.
#[repr(C)]
pub struct ArrowArray {
    /// Elements.
    pub length: i64,
    /// Null elements (-1: not computed).
    pub null_count: i64,
    /// The first element's position in the buffers.
    pub offset: i64,
    /// How many buffers.
    pub n_buffers: i64,
    /// How many children.
    pub n_children: i64,
    /// The buffers (validity first; null when there is no null).
    pub buffers: *mut *const c_void,
    /// The children.
    pub children: *mut *mut ArrowArray,
    /// Dictionary (unused here: null).
    pub dictionary: *mut ArrowArray,
    /// Frees what the struct holds; null once released or moved.
    pub release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    /// The producer's.
    pub private_data: *mut c_void,
}

/// The spec's `ArrowArrayStream`: arrays one after another.
#[repr(C)]
pub struct ArrowArrayStream {
    /// Writes the stream's schema.
    pub get_schema: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowSchema) -> c_int>,
    /// Writes the next array (released: the end).
    pub get_next: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowArray) -> c_int>,
    /// The last error's message.
    pub get_last_error: Option<unsafe extern "C" fn(*mut ArrowArrayStream) -> *const c_char>,
    /// Frees the stream.
    pub release: Option<unsafe extern "C" fn(*mut ArrowArrayStream)>,
    /// The producer's.
    pub private_data: *mut c_void,
}

/// The schema is nullable (`ARROW_FLAG_NULLABLE`).
pub const FLAG_NULLABLE: i64 = 2;

impl ArrowSchema {
    /// A released schema: what a consumer's struct holds before it is filled.
    pub fn empty() -> ArrowSchema {
        ArrowSchema {
            format: std::ptr::null(),
            name: std::ptr::null(),
            metadata: std::ptr::null(),
            flags: 0,
            n_children: 0,
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: None,
            private_data: std::ptr::null_mut(),
        }
    }
}

impl ArrowArray {
    /// A released array.
    pub fn empty() -> ArrowArray {
        ArrowArray {
            length: 0,
            null_count: 0,
            offset: 0,
            n_buffers: 0,
            n_children: 0,
            buffers: std::ptr::null_mut(),
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: None,
            private_data: std::ptr::null_mut(),
        }
    }

    /// Takes the struct at `from`, leaving it released (the spec's "move").
    ///
    /// # Safety
    /// `from` points to a valid, writable `ArrowArray`.
    pub unsafe fn take(from: *mut ArrowArray) -> ArrowArray {
        // SAFETY: the caller's contract; the released struct left behind
        // owns nothing, so the two never both release.
        unsafe { std::ptr::replace(from, ArrowArray::empty()) }
    }
}

impl Drop for ArrowArray {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: a struct with a release callback is live, and this
            // is its owner's one call.
            unsafe { release(self) };
        }
    }
}

impl Drop for ArrowSchema {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: as `ArrowArray`'s drop.
            unsafe { release(self) };
        }
    }
}

/// `PyCapsule_GetPointer`, given once by Python ([`rustfx_arrow_init`]),
/// so the capsule destructor can find its struct without this library
/// linking libpython (it loads into any CPython, and in Ray workers).
static CAPSULE_GET_POINTER: AtomicUsize = AtomicUsize::new(0);

type GetPointer = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// Gives the library CPython's `PyCapsule_GetPointer` (its address, from
/// `ctypes.pythonapi`), which the capsule destructors call.
///
/// # Safety
/// `get_pointer` is `PyCapsule_GetPointer` of the running interpreter.
#[no_mangle]
pub unsafe extern "C" fn rustfx_arrow_init(get_pointer: GetPointer) {
    CAPSULE_GET_POINTER.store(get_pointer as usize, Ordering::Release);
}

/// The capsule names of the PyCapsule interface, NUL-terminated.
const SCHEMA_CAPSULE: &[u8] = b"arrow_schema\0";
const ARRAY_CAPSULE: &[u8] = b"arrow_array\0";

/// The name of a capsule that holds an `ArrowSchema` (`which` 0) or an
/// `ArrowArray` (1), for `PyCapsule_New`: static, so it outlives every
/// capsule.
#[no_mangle]
pub extern "C" fn rustfx_arrow_capsule_name(which: u32) -> *const c_char {
    match which {
        0 => SCHEMA_CAPSULE.as_ptr().cast(),
        _ => ARRAY_CAPSULE.as_ptr().cast(),
    }
}

/// The struct in `capsule` (named `name`), or null.
///
/// # Safety
/// `capsule` is a live PyCapsule, called with the GIL held.
unsafe fn capsule_pointer(capsule: *mut c_void, name: &[u8]) -> *mut c_void {
    let get = CAPSULE_GET_POINTER.load(Ordering::Acquire);
    if get == 0 || capsule.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: a non-zero `get` is PyCapsule_GetPointer (rustfx_arrow_init).
    let get: GetPointer = unsafe { std::mem::transmute::<usize, GetPointer>(get) };
    // SAFETY: `name` is a NUL-terminated static, the capsule's own name.
    unsafe { get(capsule, name.as_ptr().cast()) }
}

/// The PyCapsule destructor of an "arrow_schema" capsule whose struct
/// `rustfx_rows_export` boxed: releases the struct unless its consumer
/// moved it out (its `release` is then null), then frees the box.
///
/// # Safety
/// `capsule` is such a capsule, [`rustfx_arrow_init`] was called, and
/// CPython calls this with the GIL held.
#[no_mangle]
pub unsafe extern "C" fn rustfx_arrow_schema_capsule_free(capsule: *mut c_void) {
    // SAFETY: the caller's contract.
    let schema = unsafe { capsule_pointer(capsule, SCHEMA_CAPSULE) };
    // SAFETY: the pointer came from Box::into_raw in rustfx_rows_export.
    unsafe { rustfx_arrow_schema_free(schema.cast()) };
}

/// As [`rustfx_arrow_schema_capsule_free`], for an "arrow_array" capsule.
///
/// # Safety
/// As [`rustfx_arrow_schema_capsule_free`].
#[no_mangle]
pub unsafe extern "C" fn rustfx_arrow_array_capsule_free(capsule: *mut c_void) {
    // SAFETY: the caller's contract.
    let array = unsafe { capsule_pointer(capsule, ARRAY_CAPSULE) };
    // SAFETY: as above.
    unsafe { rustfx_arrow_array_free(array.cast()) };
}

/// Releases (unless moved out) and frees a schema that
/// `rustfx_rows_export` boxed, for a caller that kept it out of a capsule.
///
/// # Safety
/// `schema` came from `rustfx_rows_export` (or is null), freed once.
#[no_mangle]
pub unsafe extern "C" fn rustfx_arrow_schema_free(schema: *mut ArrowSchema) {
    if !schema.is_null() {
        // SAFETY: the caller's contract.
        drop(unsafe { Box::from_raw(schema) });
    }
}

/// As [`rustfx_arrow_schema_free`], for an array.
///
/// # Safety
/// `array` came from `rustfx_rows_export` (or is null), freed once.
#[no_mangle]
pub unsafe extern "C" fn rustfx_arrow_array_free(array: *mut ArrowArray) {
    if !array.is_null() {
        // SAFETY: the caller's contract.
        drop(unsafe { Box::from_raw(array) });
    }
}

/// A release callback for a schema whose owner keeps what it points to
/// (Python's `Documents.of` buffers): it only marks the struct released.
///
/// # Safety
/// `schema` is a live schema.
#[no_mangle]
pub unsafe extern "C" fn rustfx_arrow_release_borrowed_schema(schema: *mut ArrowSchema) {
    // SAFETY: the caller's contract.
    if let Some(schema) = unsafe { schema.as_mut() } {
        schema.release = None;
    }
}

/// As [`rustfx_arrow_release_borrowed_schema`], for an array.
///
/// # Safety
/// `array` is a live array.
#[no_mangle]
pub unsafe extern "C" fn rustfx_arrow_release_borrowed_array(array: *mut ArrowArray) {
    // SAFETY: the caller's contract.
    if let Some(array) = unsafe { array.as_mut() } {
        array.release = None;
    }
}

#[cfg(test)]
mod tests;
