//! Arrow C Data in: documents read in place from a binary or string array
//! (or a stream of them), and rows (the export's layout) copied into a
//! [`Batch`] to be checked and stored.
//!
//! The C Data Interface gives no buffer sizes: a consumer reads what the
//! format, `length`, `offset` and the offsets imply. What can be checked
//! is: the format, the buffer and child counts, offsets that never go back
//! and are not negative, a view's buffer index and its span within that
//! buffer's size (views carry their buffers' sizes). A producer whose
//! offsets run past its data is wrong in a way no consumer can see; the
//! arrays a caller passes are its contract.

use super::export::format_of;
use super::{ArrowArray, ArrowArrayStream, ArrowSchema};
use rustfx::output::{Batch, DType, Layout, Offsets, OutputSpec, Strings, Values};
use rustfx::{Error, Result};
use std::ffi::{c_void, CStr};

/// One document of an imported array: its bytes, or `None` for a null.
pub type DocumentSpan = Option<(*const u8, usize)>;

/// The binary layouts documents can come in.
#[derive(Clone, Copy)]
enum Binary {
    /// `binary`, `utf8`: `i32` offsets.
    Offsets32,
    /// `large_binary`, `large_utf8`: `i64` offsets.
    Offsets64,
    /// `binary_view`, `string_view`: 16-byte views.
    Views,
}

/// The schema's format string.
///
/// # Safety
/// `schema` is a live schema.
unsafe fn format(schema: &ArrowSchema) -> Result<&[u8]> {
    if schema.release.is_none() || schema.format.is_null() {
        return Err(Error::invalid_argument("a released Arrow schema"));
    }
    // SAFETY: a live schema's format is a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(schema.format) }.to_bytes())
}

fn binary_of(format: &[u8]) -> Result<Binary> {
    match format {
        b"z" | b"u" => Ok(Binary::Offsets32),
        b"Z" | b"U" => Ok(Binary::Offsets64),
        b"vz" | b"vu" => Ok(Binary::Views),
        other => Err(Error::invalid_argument(format!(
            "documents must be an Arrow binary or string array (binary, large_binary, utf8, \
             large_utf8, binary_view, string_view), got Arrow format {:?}",
            String::from_utf8_lossy(other)
        ))),
    }
}

/// Buffer `i` of `array`.
///
/// # Safety
/// `array` is live and has more than `i` buffers.
unsafe fn buffer(array: &ArrowArray, i: usize) -> *const c_void {
    // SAFETY: the caller checked `n_buffers`.
    unsafe { *array.buffers.add(i) }
}

/// `array`'s length and offset, checked not negative, and that it has
/// `buffers` buffers (at least, when `at_least`) and `children` children.
fn shape(
    array: &ArrowArray,
    buffers: i64,
    at_least: bool,
    children: i64,
) -> Result<(usize, usize)> {
    let buffers_ok = if at_least {
        array.n_buffers >= buffers
    } else {
        array.n_buffers == buffers
    };
    if array.release.is_none()
        || array.length < 0
        || array.offset < 0
        || !buffers_ok
        || array.n_children != children
        || array.buffers.is_null()
        || (children > 0 && array.children.is_null())
    {
        return Err(Error::invalid_argument(format!(
            "an Arrow array of an unexpected shape (length {}, offset {}, {} buffers, {} \
             children)",
            array.length, array.offset, array.n_buffers, array.n_children
        )));
    }
    Ok((array.length as usize, array.offset as usize))
}

/// Whether element `i` (counted from the buffers' start) is valid.
///
/// # Safety
/// `validity` is null or holds bit `i`.
unsafe fn valid(validity: *const c_void, i: usize) -> bool {
    // SAFETY: the caller's contract.
    validity.is_null() || unsafe { *validity.cast::<u8>().add(i / 8) } & (1 << (i % 8)) != 0
}

/// Offset `i` of an `i32` or `i64` offsets buffer, as usize (refused if
/// negative).
///
/// # Safety
/// `offsets` holds offset `i`.
unsafe fn offset_at(offsets: *const c_void, wide: bool, i: usize) -> Result<usize> {
    // SAFETY: the caller's contract; Arrow buffers may be unaligned.
    let value = unsafe {
        if wide {
            offsets.cast::<i64>().add(i).read_unaligned()
        } else {
            i64::from(offsets.cast::<i32>().add(i).read_unaligned())
        }
    };
    usize::try_from(value).map_err(|_| Error::invalid_argument("a negative Arrow offset"))
}

/// Appends the documents of `array` (format of `schema`) to `docs`.
///
/// # Safety
/// `schema` and `array` are live and describe each other, their buffers
/// as the Arrow spec lays them out.
pub unsafe fn documents(
    schema: &ArrowSchema,
    array: &ArrowArray,
    docs: &mut Vec<DocumentSpan>,
) -> Result<()> {
    // SAFETY: `schema` is live (the caller's contract).
    let kind = binary_of(unsafe { format(schema) }?)?;
    let (length, offset) = match kind {
        Binary::Views => shape(array, 3, true, 0)?,
        _ => shape(array, 3, false, 0)?,
    };
    // SAFETY: `shape` checked at least 3 buffers.
    let validity = unsafe { buffer(array, 0) };
    docs.reserve(length);
    match kind {
        Binary::Offsets32 | Binary::Offsets64 => {
            let wide = matches!(kind, Binary::Offsets64);
            // SAFETY: `shape` checked 3 buffers.
            let offsets = unsafe { buffer(array, 1) };
            // SAFETY: as above.
            let data = unsafe { buffer(array, 2) }.cast::<u8>();
            if length > 0 && offsets.is_null() {
                return Err(Error::invalid_argument(
                    "an Arrow binary array without offsets",
                ));
            }
            for i in offset..offset + length {
                // SAFETY: a validity bitmap holds `offset + length` bits
                // (the caller's contract).
                if !unsafe { valid(validity, i) } {
                    docs.push(None);
                    continue;
                }
                // SAFETY: the offsets hold `offset + length + 1` values
                // (the caller's contract).
                let start = unsafe { offset_at(offsets, wide, i) }?;
                // SAFETY: as above; `i + 1 <= offset + length`.
                let end = unsafe { offset_at(offsets, wide, i + 1) }?;
                if end < start || (end > start && data.is_null()) {
                    return Err(Error::invalid_argument(format!(
                        "Arrow offsets go back at element {i}"
                    )));
                }
                // SAFETY: the data buffer holds the bytes its offsets say.
                docs.push(Some((unsafe { data.add(start) }, end - start)));
            }
        }
        Binary::Views => {
            let data_buffers = (array.n_buffers - 3) as usize;
            // SAFETY: `shape` checked at least 3 buffers.
            let views = unsafe { buffer(array, 1) }.cast::<u8>();
            // SAFETY: the last of at least 3 buffers.
            let sizes = unsafe { buffer(array, array.n_buffers as usize - 1) }.cast::<i64>();
            if length > 0 && views.is_null() {
                return Err(Error::invalid_argument("an Arrow view array without views"));
            }
            for i in offset..offset + length {
                // SAFETY: a validity bitmap holds `offset + length` bits
                // (the caller's contract).
                if !unsafe { valid(validity, i) } {
                    docs.push(None);
                    continue;
                }
                // SAFETY: 16 bytes per view.
                let view = unsafe { views.add(16 * i) };
                // SAFETY: `at` is 0, 8 or 12: 4 bytes inside the 16 of the view.
                let field = |at: usize| unsafe { view.add(at).cast::<i32>().read_unaligned() };
                let len = usize::try_from(field(0))
                    .map_err(|_| Error::invalid_argument("a negative Arrow view length"))?;
                if len <= 12 {
                    // SAFETY: short strings are inline, after the length.
                    docs.push(Some((unsafe { view.add(4) }, len)));
                    continue;
                }
                let (index, start) = (field(8), field(12));
                let index = usize::try_from(index).ok().filter(|&b| b < data_buffers);
                let start = usize::try_from(start).ok();
                let (Some(index), Some(start)) = (index, start) else {
                    return Err(Error::invalid_argument(format!(
                        "Arrow view {i} points outside its buffers"
                    )));
                };
                if sizes.is_null() {
                    return Err(Error::invalid_argument(
                        "an Arrow view array without its buffers' sizes",
                    ));
                }
                // SAFETY: the non-null sizes buffer holds one i64 per data
                // buffer.
                let size = unsafe { sizes.add(index).read_unaligned() };
                if start.checked_add(len).is_none_or(|end| end as i64 > size) {
                    return Err(Error::invalid_argument(format!(
                        "Arrow view {i} runs past its buffer"
                    )));
                }
                // SAFETY: `index < n_buffers - 3`, so buffer `2 + index` exists.
                let data = unsafe { buffer(array, 2 + index) }.cast::<u8>();
                // SAFETY: checked against the buffer's size above.
                docs.push(Some((unsafe { data.add(start) }, len)));
            }
        }
    }
    Ok(())
}

/// The arrays of `stream` (its schema first), each read as
/// [`documents`] into `docs`; returns the arrays, which own the bytes
/// `docs` point to. The stream is released.
///
/// # Safety
/// `stream` is a live stream, taken by this call.
pub unsafe fn stream_documents(
    mut stream: ArrowArrayStream,
    docs: &mut Vec<DocumentSpan>,
) -> Result<Vec<ArrowArray>> {
    struct Release<'a>(&'a mut ArrowArrayStream);
    impl Drop for Release<'_> {
        fn drop(&mut self) {
            if let Some(release) = self.0.release {
                // SAFETY: the stream is live and this is its one release.
                unsafe { release(self.0) };
            }
        }
    }
    let stream = Release(&mut stream);
    let failed = |stream: &mut ArrowArrayStream, code: i32| {
        let text = stream
            .get_last_error
            // SAFETY: a live stream's last error is null or a C string.
            .map(|f| unsafe { f(stream) })
            .filter(|p| !p.is_null())
            // SAFETY: a non-null last error is a NUL-terminated string.
            .map(|p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("error {code}"));
        Error::invalid_argument(format!("the Arrow stream of documents failed: {text}"))
    };
    let (Some(get_schema), Some(get_next)) = (stream.0.get_schema, stream.0.get_next) else {
        return Err(Error::invalid_argument("a released Arrow stream"));
    };
    let mut schema = ArrowSchema::empty();
    // SAFETY: the stream is live; `schema` is writable.
    let code = unsafe { get_schema(stream.0, &mut schema) };
    if code != 0 {
        return Err(failed(stream.0, code));
    }
    let mut arrays = Vec::new();
    loop {
        let mut array = ArrowArray::empty();
        // SAFETY: as above.
        let code = unsafe { get_next(stream.0, &mut array) };
        if code != 0 {
            return Err(failed(stream.0, code));
        }
        if array.release.is_none() {
            return Ok(arrays);
        }
        // SAFETY: the stream's arrays have its schema.
        unsafe { documents(&schema, &array, docs) }?;
        arrays.push(array);
    }
}

/// Rows of `output`'s layout and dtype, in the export's Arrow layout
/// (export.rs), copied into a batch and checked whole
/// ([`Batch::check`]). A null row is refused: a failed document has no
/// row to store.
///
/// # Safety
/// `schema` and `array` are live and describe each other.
pub unsafe fn rows(schema: &ArrowSchema, array: &ArrowArray, output: &OutputSpec) -> Result<Batch> {
    // SAFETY: the caller's contract.
    let (batch, nulls) = unsafe { rows_and_nulls(schema, array, output) }?;
    if let Some(&i) = nulls.first() {
        return Err(Error::invalid_argument(format!(
            "row {i} is null: a failed document has no row to store"
        )));
    }
    Ok(batch)
}

/// As [`rows`], null rows allowed (their values are kept, as the export
/// gives them): the batch and the indices of the null rows.
///
/// # Safety
/// As [`rows`].
pub unsafe fn rows_and_nulls(
    schema: &ArrowSchema,
    array: &ArrowArray,
    output: &OutputSpec,
) -> Result<(Batch, Vec<usize>)> {
    // SAFETY: `schema` is live (the caller's contract).
    let format = unsafe { self::format(schema) }?;
    let width = output.width.unwrap_or(0);
    let expected = match output.layout {
        Layout::Dense => format!("+w:{width}"),
        Layout::Ragged | Layout::Sparse => "+L".to_string(),
    };
    if format != expected.as_bytes() || schema.n_children != 1 || schema.children.is_null() {
        return Err(Error::invalid_argument(format!(
            "rows of {output:?} must be Arrow {expected}, got {:?}",
            String::from_utf8_lossy(format)
        )));
    }
    let buffers = if output.layout == Layout::Dense { 1 } else { 2 };
    let (rows, offset) = shape(array, buffers, false, 1)?;
    // SAFETY: `shape` checked 1 or 2 buffers.
    let validity = unsafe { buffer(array, 0) };
    let nulls: Vec<usize> = (offset..offset + rows)
        // SAFETY: a validity bitmap holds `offset + rows` bits (the
        // caller's contract).
        .filter(|&i| !unsafe { valid(validity, i) })
        .map(|i| i - offset)
        .collect();
    // SAFETY: one child, checked above.
    let (child_schema, child) = unsafe { (&**schema.children, &**array.children) };
    let batch = match output.layout {
        Layout::Dense => {
            // SAFETY: the child is live and holds `(offset + rows) * width`
            // values (the caller's contract).
            let values = unsafe {
                values(
                    child_schema,
                    child,
                    output.dtype,
                    offset * width,
                    rows * width,
                )
            }?;
            Batch::Dense {
                rows,
                width,
                values,
            }
        }
        Layout::Ragged | Layout::Sparse => {
            // SAFETY: `shape` checked 2 buffers.
            let list = unsafe { buffer(array, 1) };
            // SAFETY: the list's offsets hold `offset + rows + 1` i64s (the
            // caller's contract).
            let first = unsafe { offset_at(list, true, offset) }?;
            let mut ends = Vec::with_capacity(rows + 1);
            for i in offset..=offset + rows {
                // SAFETY: as above; `i <= offset + rows`.
                ends.push(unsafe { offset_at(list, true, i) }?.wrapping_sub(first) as i64);
            }
            let offsets = Offsets::try_from_vec(ends)?;
            let count = offsets.last();
            if output.layout == Layout::Ragged {
                // SAFETY: the child is live and holds the entries its
                // offsets say (the caller's contract).
                let values = unsafe { values(child_schema, child, output.dtype, first, count) }?;
                Batch::Ragged { values, offsets }
            } else {
                // SAFETY: as above.
                let (indices, values) =
                    unsafe { sparse(child_schema, child, output.dtype, first, count) }?;
                Batch::Sparse {
                    width,
                    indices,
                    values,
                    offsets,
                }
            }
        }
    };
    batch.check(output, rows)?;
    Ok((batch, nulls))
}

/// `count` values of `dtype` from element `start` of a list's child.
///
/// # Safety
/// As [`rows`].
unsafe fn values(
    schema: &ArrowSchema,
    array: &ArrowArray,
    dtype: DType,
    start: usize,
    count: usize,
) -> Result<Values> {
    // SAFETY: `schema` is live (the caller's contract).
    let format = unsafe { self::format(schema) }?;
    if format != format_of(dtype).as_bytes() {
        return Err(Error::invalid_argument(format!(
            "values of {} must be Arrow {:?}, got {:?}",
            dtype.name(),
            format_of(dtype),
            String::from_utf8_lossy(format)
        )));
    }
    let first = start + shape_of_leaf(array, dtype)?;
    if dtype == DType::String {
        // SAFETY: `shape_of_leaf` checked 3 buffers for strings.
        let offsets = unsafe { buffer(array, 1) };
        // SAFETY: as above.
        let data = unsafe { buffer(array, 2) }.cast::<u8>();
        // SAFETY: the offsets hold `first + count + 1` i64s (the caller's
        // contract).
        let base = unsafe { offset_at(offsets, true, first) }?;
        let mut strings = Strings::default();
        for i in first..first + count {
            strings
                .offsets
                // SAFETY: as above; `i + 1 <= first + count`.
                .push(unsafe { offset_at(offsets, true, i + 1) }?.wrapping_sub(base));
        }
        let total = strings.offsets.last();
        if total > 0 {
            // SAFETY: the data holds the bytes its offsets say.
            strings.bytes = unsafe { std::slice::from_raw_parts(data.add(base), total) }.to_vec();
        }
        return Ok(Values::String(strings));
    }
    let size = dtype.size().unwrap_or(1);
    // SAFETY: `shape_of_leaf` checked 2 buffers.
    let data = unsafe { buffer(array, 1) }.cast::<u8>();
    let bytes = if count == 0 {
        &[][..]
    } else {
        // SAFETY: the child holds its values of the dtype's size.
        unsafe { std::slice::from_raw_parts(data.add(first * size), count * size) }
    };
    Values::from_host_bytes(dtype, bytes)
}

/// The child's own offset, after checking its shape (a leaf of `dtype`
/// with no nulls).
fn shape_of_leaf(array: &ArrowArray, dtype: DType) -> Result<usize> {
    let buffers = if dtype == DType::String { 3 } else { 2 };
    let (_, offset) = shape(array, buffers, false, 0)?;
    if array.null_count > 0 {
        return Err(Error::invalid_argument("null values inside a row"));
    }
    Ok(offset)
}

/// The indices and values of `count` sparse entries from element `start`
/// of a `Struct<index: int64, value: T>`.
///
/// # Safety
/// As [`rows`].
unsafe fn sparse(
    schema: &ArrowSchema,
    array: &ArrowArray,
    dtype: DType,
    start: usize,
    count: usize,
) -> Result<(Vec<u64>, Values)> {
    // SAFETY: `schema` is live (the caller's contract).
    let format = unsafe { self::format(schema) }?;
    if format != b"+s" || schema.n_children != 2 || schema.children.is_null() {
        return Err(Error::invalid_argument(
            "sparse entries must be an Arrow struct<index: int64, value>",
        ));
    }
    let (_, offset) = shape(array, 1, false, 2)?;
    // SAFETY: `i` is 0 or 1; both sides have 2 live children (checked
    // above, and the caller's contract).
    let child = |i: usize| unsafe { (&**schema.children.add(i), &**array.children.add(i)) };
    let (index_schema, index) = child(0);
    let (value_schema, value) = child(1);
    let at = start + offset;
    // SAFETY: the children are live and hold the entries (the caller's
    // contract).
    let Values::Int64(indices) = (unsafe { values(index_schema, index, DType::Int64, at, count) })?
    else {
        return Err(Error::invalid_argument("sparse indices must be int64"));
    };
    // SAFETY: as above.
    let values = unsafe { values(value_schema, value, dtype, at, count) }?;
    // Negative indices wrap past any width: Batch::check refuses them.
    Ok((indices.into_iter().map(|i| i as u64).collect(), values))
}
