// The calls follow the module's contract: handles from their `_new`,
// buffers with their lengths.
use super::*;
use rustfx::output::Batch;
use rustfx::read::read_file;
use rustfx::sha256::sha256_hex;

fn extractor(spec: &str) -> *mut SpecExtractor {
    let mut message = ptr::null_mut();
    // SAFETY: `spec.len()` bytes at `spec`; `message` is writable.
    let e = unsafe { rustfx_extractor_new(spec.as_ptr(), spec.len(), &mut message) };
    assert!(!e.is_null());
    e
}

/// `rows` exported and read back by the import (a consumer's reading of
/// the export), as a batch of `spec`'s output; the rows are freed.
fn exported(rows: *mut Rows, spec: &str) -> Batch {
    assert!(!rows.is_null());
    let (mut schema, mut array) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: `rows` came from an extraction; both outs are writable.
    assert!(unsafe { rustfx_rows_export(rows, &mut schema, &mut array, ptr::null_mut()) });
    // SAFETY: `rows` came from an extraction, freed once (the export keeps its share).
    unsafe { rustfx_rows_free(rows) };
    let output = FeatureSpec::from_json(spec).unwrap().output();
    // SAFETY: both were just exported and describe each other.
    let batch = unsafe { arrow::import::rows(&*schema, &*array, &output) }.unwrap();
    // SAFETY: both came from `rustfx_rows_export`, freed once.
    unsafe {
        arrow::rustfx_arrow_schema_free(schema);
        arrow::rustfx_arrow_array_free(array);
    }
    batch
}

#[test]
fn a_bad_spec_is_null_and_the_cores_message() {
    let spec = r#"{"extractor": "byte_histogram", "params": {"x": 1}}"#;
    let mut message = ptr::null_mut();
    // SAFETY: `spec.len()` bytes at `spec`; `message` is writable.
    let e = unsafe { rustfx_extractor_new(spec.as_ptr(), spec.len(), &mut message) };
    assert!(e.is_null());
    // SAFETY: `message` was written by `report`.
    let text = unsafe { std::ffi::CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: `message` was written by an entry point; freed once.
    unsafe { rustfx_message_free(message) };
    assert_eq!(
        text,
        rustfx::spec::load(spec).unwrap_err().to_string(),
        "the message is the core's"
    );
    // No room for a message: still null, nothing written.
    // SAFETY: `spec.len()` bytes at `spec`; no room for a message.
    assert!(unsafe { rustfx_extractor_new(spec.as_ptr(), spec.len(), ptr::null_mut()) }.is_null());
}

/// `rustfx_spec_query`'s answer (the JSON array's strings) or message.
fn query(what: &str, spec: &str) -> std::result::Result<Vec<String>, String> {
    let (mut answer, mut len, mut message) = (ptr::null_mut(), 0, ptr::null_mut());
    // SAFETY: each buffer with its length; the outs are writable.
    let ok = unsafe {
        rustfx_spec_query(
            what.as_ptr(),
            what.len(),
            spec.as_ptr(),
            spec.len(),
            &mut answer,
            &mut len,
            &mut message,
        )
    };
    let taken = if ok { answer } else { message };
    assert!(!taken.is_null());
    // SAFETY: written by `rustfx_spec_query`, NUL-terminated.
    let text = unsafe { std::ffi::CStr::from_ptr(taken) }
        .to_str()
        .unwrap()
        .to_owned();
    // SAFETY: written by `rustfx_spec_query`, freed once.
    unsafe { rustfx_message_free(taken) };
    if !ok {
        return Err(text);
    }
    assert_eq!(text.len(), len);
    Ok(serde_json::from_str(&text).unwrap())
}

#[test]
fn spec_queries_are_the_cores() {
    let cases = [
        ("registry", ""),
        ("spec", r#"{"extractor": "byte_histogram"}"#),
        (
            "spec",
            r#"{"extractor": "byte_histogram", "params": {"x": 1}}"#,
        ),
        ("feature_names", r#"{"extractor": "general_file_info"}"#),
        ("feature_names", r#"{"extractor": "byte_histogram"}"#),
        ("feature_names", "not json"),
        ("nonsense", ""),
    ];
    for (what, spec) in cases {
        let want = rustfx::spec::query(what, spec).map_err(|e| e.to_string());
        assert_eq!(query(what, spec), want, "{what} {spec}");
    }
    // Wrong calls: refused with a message, nothing written.
    let mut message = ptr::null_mut();
    let bad = [0xffu8];
    // SAFETY: each buffer with its length; the outs are writable.
    assert!(!unsafe {
        rustfx_spec_query(
            b"spec".as_ptr(),
            4,
            bad.as_ptr(),
            1,
            &mut ptr::null_mut(),
            &mut 0,
            &mut message,
        )
    });
    assert!(!message.is_null());
    // SAFETY: `message` was written by an entry point; freed once.
    unsafe { rustfx_message_free(message) };
    // SAFETY: 8 bytes at the query; the null outs are refused.
    assert!(!unsafe {
        rustfx_spec_query(
            b"registry".as_ptr(),
            8,
            ptr::null(),
            0,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    });
}

#[test]
fn rows_and_statuses_are_the_cores() {
    let dir = std::env::temp_dir().join(format!("rustfx-c-abi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a");
    std::fs::write(&file, b"hello hello world").unwrap();
    let documents = rustfx_documents_new(3);
    let path = file.to_str().unwrap();
    assert_eq!(
        // SAFETY: `documents` came from `rustfx_documents_new`; `path.len()` bytes at `path`.
        unsafe { rustfx_documents_read(documents, 0, path.as_ptr(), path.len(), 5) },
        0
    );
    let missing = dir.join("missing");
    let missing = missing.to_str().unwrap();
    // SAFETY: as above, `missing.len()` bytes at `missing`.
    let code = unsafe { rustfx_documents_read(documents, 1, missing.as_ptr(), missing.len(), 5) };
    let expected = read_file(missing.as_bytes(), 5).unwrap_err();
    assert_eq!(code, expected.kind().status_code());
    assert_eq!(code, 5, "NOT_FOUND");
    let (mut data, mut len) = (ptr::null(), 0);
    // SAFETY: `documents` came from `rustfx_documents_new`; both outs are writable.
    assert!(unsafe { rustfx_documents_message(documents, 1, &mut data, &mut len) });
    // SAFETY: the message is `len` bytes at `data`.
    let message = unsafe { std::slice::from_raw_parts(data, len) };
    assert_eq!(message, expected.to_string().as_bytes());
    // SAFETY: as above; 3 bytes of contents and no message.
    assert!(unsafe { rustfx_documents_set(documents, 2, b"xyz".as_ptr(), 3, 0, ptr::null(), 0) });
    // Wrong calls fail without touching anything.
    assert_eq!(
        // SAFETY: as above (`i` out of range is refused).
        unsafe { rustfx_documents_read(documents, 3, path.as_ptr(), path.len(), 5) },
        -1
    );
    assert_eq!(
        // SAFETY: as above (a negative `max_bytes` is refused).
        unsafe { rustfx_documents_read(documents, 0, path.as_ptr(), path.len(), -1) },
        -1
    );
    // SAFETY: null documents are refused.
    assert!(!unsafe {
        rustfx_documents_set(ptr::null_mut(), 0, ptr::null(), 0, 0, ptr::null(), 0)
    });

    let (mut sizes, mut hex) = ([0i64; 3], [0u8; 192]);
    // SAFETY: room for 3 sizes and 3 × 64 hex digits.
    assert!(unsafe { rustfx_documents_digest(documents, sizes.as_mut_ptr(), hex.as_mut_ptr()) });
    assert_eq!(sizes, [5, 0, 3]);
    assert_eq!(&hex[..64], sha256_hex(b"hello").as_bytes());
    assert_eq!(&hex[128..], sha256_hex(b"xyz").as_bytes());

    // The missing file's row is null in the export: its rows are the
    // core's for the other two, read back through Arrow.
    let docs: [&[u8]; 2] = [b"hello", b"xyz"];
    let (mut schema, mut array) = (ptr::null_mut(), ptr::null_mut());
    let histogram = extractor(r#"{"extractor": "byte_histogram"}"#);
    // SAFETY: both handles came from their constructors.
    let rows = unsafe { rustfx_extract(histogram, documents, ptr::null_mut()) };
    // SAFETY: `rows` came from `rustfx_extract`; both outs are writable.
    assert!(unsafe { rustfx_rows_export(rows, &mut schema, &mut array, ptr::null_mut()) });
    // SAFETY: just exported.
    let (s, a) = unsafe { (&*schema, &*array) };
    assert_eq!((a.length, a.null_count), (3, 1));
    // SAFETY: a row is null, so the validity buffer is there, with a byte.
    let validity = unsafe { *(*a.buffers).cast::<u8>() };
    assert_eq!(validity & 0b111, 0b101, "row 1 is null");
    // SAFETY: an exported format is a NUL-terminated string.
    let format = unsafe { std::ffi::CStr::from_ptr(s.format) };
    assert_eq!(format.to_bytes(), b"+w:256");
    // SAFETY: a fixed-size list has one child.
    let child = unsafe { &**a.children };
    // SAFETY: the child holds 3 rows of 256 f32s in buffer 1.
    let values = unsafe { std::slice::from_raw_parts((*child.buffers.add(1)).cast::<f32>(), 768) };
    for (i, doc) in [(0, docs[0]), (2, docs[1])] {
        let core = rustfx::spec::load(r#"{"extractor": "byte_histogram"}"#)
            .unwrap()
            .1;
        let want = core
            .extract_batch(&[doc])
            .unwrap()
            .into_dense::<f32>()
            .unwrap()
            .values;
        assert_eq!(values[256 * i..256 * (i + 1)], want[..]);
    }
    // SAFETY: each came from its constructor, freed once.
    unsafe {
        arrow::rustfx_arrow_schema_free(schema);
        arrow::rustfx_arrow_array_free(array);
        rustfx_rows_free(rows);
        rustfx_extractor_free(histogram);
    }
    // SAFETY: from `rustfx_documents_new`, freed once.
    unsafe { rustfx_documents_free(documents) };
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An explanation's columns through the C ABI, as the core's `Contribution`s
/// (texts split at their ends), its truncated flag and its combine line; or
/// the message of a refusal.
type Explained = (Vec<rustfx::explain::Contribution>, bool, String);

fn explain_via_abi(
    extractor: *const SpecExtractor,
    doc: &[u8],
    max_contributions: Option<i64>,
    max_text_bytes: Option<i64>,
    byte_offsets: bool,
) -> std::result::Result<Explained, String> {
    let caps = |cap: &Option<i64>| cap.as_ref().map_or(ptr::null(), |c| c as *const i64);
    let mut message = ptr::null_mut();
    // SAFETY: `extractor` came from `rustfx_extractor_new`; `doc.len()` bytes at `doc`; each cap
    // null or an i64; `message` is writable.
    let handle = unsafe {
        rustfx_explain(
            extractor,
            doc.as_ptr(),
            doc.len(),
            caps(&max_contributions),
            caps(&max_text_bytes),
            byte_offsets,
            &mut message,
        )
    };
    if handle.is_null() {
        // SAFETY: written by `report`, NUL-terminated.
        let text = unsafe { std::ffi::CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: `message` was written by an entry point; freed once.
        unsafe { rustfx_message_free(message) };
        return Err(text);
    }
    let column = |which| {
        let (mut data, mut len) = (ptr::null(), 0);
        // SAFETY: `handle` came from `rustfx_explain`; both outs are writable.
        assert!(unsafe { rustfx_explanation_array(handle, which, &mut data, &mut len) });
        (data, len)
    };
    fn read<T: Copy>((data, len): (*const u8, usize)) -> Vec<T> {
        if len == 0 {
            return Vec::new();
        }
        // SAFETY: the column holds `len` values of T.
        unsafe { std::slice::from_raw_parts(data.cast::<T>(), len).to_vec() }
    }
    let index: Vec<u64> = read(column(EXPLAIN_INDEX));
    let offset: Vec<u64> = read(column(EXPLAIN_OFFSET));
    let length: Vec<u64> = read(column(EXPLAIN_LENGTH));
    let value: Vec<f64> = read(column(EXPLAIN_VALUE));
    let text: Vec<u8> = read(column(EXPLAIN_TEXT));
    let ends: Vec<u64> = read(column(EXPLAIN_TEXT_ENDS));
    let n = index.len();
    assert!([offset.len(), length.len(), value.len(), ends.len()]
        .iter()
        .all(|&len| len == n));
    let mut start = 0;
    let contributions = (0..n)
        .map(|i| {
            let end = ends[i] as usize;
            let c = rustfx::explain::Contribution {
                index: index[i],
                offset: offset[i],
                length: length[i],
                value: value[i],
                text: text[start..end].to_vec(),
            };
            start = end;
            c
        })
        .collect();
    assert_eq!(start, text.len(), "the last end is the texts' length");
    let mut truncated = false;
    // SAFETY: `handle` came from `rustfx_explain`; `truncated` is writable.
    assert!(unsafe { rustfx_explanation_truncated(handle, &mut truncated) });
    let (mut data, mut len) = (ptr::null(), 0);
    // SAFETY: `handle` came from `rustfx_explain`; both outs are writable.
    assert!(unsafe { rustfx_explanation_combine(handle, &mut data, &mut len) });
    // SAFETY: `len` bytes at `data`, static.
    let combine = unsafe { std::slice::from_raw_parts(data, len) };
    let combine = String::from_utf8(combine.to_vec()).unwrap();
    // SAFETY: from `rustfx_explain`, freed once.
    unsafe { rustfx_explanation_free(handle) };
    Ok((contributions, truncated, combine))
}

/// The oracle: the core's own explanation (or its refusal).
fn explain_in_core(
    spec: &str,
    doc: &[u8],
    options: rustfx::explain::ExplainOptions,
) -> std::result::Result<Explained, String> {
    let core = rustfx::spec::load(spec).unwrap().1;
    core.explain_with(doc, &options)
        .map(|e| (e.contributions, e.truncated, e.combine.to_owned()))
        .map_err(|e| e.to_string())
}

#[test]
fn explanations_are_the_cores_for_every_registry_example() {
    let docs: [&[u8]; 4] = [
        b"",
        b"hello hello world C:\\x http://a.b",
        b"MZ\x90\0\xff\xfe w\0i\0d\0e\0 strings here",
        &[7u8; 3000],
    ];
    let options = rustfx::explain::ExplainOptions::new(50, 4, false).unwrap();
    for entry in rustfx::registry::EXTRACTORS {
        for params in entry.examples {
            let spec = format!(r#"{{"extractor": "{}", "params": {params}}}"#, entry.name);
            let handle = extractor(&spec);
            for doc in docs {
                let defaults = rustfx::explain::ExplainOptions::default();
                // Debug text, so that NaN values and the sign of zero count.
                let got = explain_via_abi(handle, doc, None, None, false);
                let want = explain_in_core(&spec, doc, defaults);
                assert_eq!(format!("{got:?}"), format!("{want:?}"), "{spec}");
                // Small caps: a 3000-byte document truncates where the
                // extractor has many contributions; texts cut at 4 bytes.
                let got = explain_via_abi(handle, doc, Some(50), Some(4), false);
                let want = explain_in_core(&spec, doc, options);
                assert_eq!(format!("{got:?}"), format!("{want:?}"), "{spec}");
            }
            // SAFETY: from `rustfx_extractor_new`, freed once.
            unsafe { rustfx_extractor_free(handle) };
        }
    }
}

#[test]
fn byte_offsets_caps_and_wrong_calls() {
    let spec = r#"{"extractor": "byte_histogram"}"#;
    let histogram = extractor(spec);
    let doc = b"abca";
    // One contribution per byte, at its offset, with the byte as index.
    let (per_byte, truncated, _) = explain_via_abi(histogram, doc, None, None, true).unwrap();
    assert!(!truncated);
    let seen: Vec<(u64, u64)> = per_byte.iter().map(|c| (c.offset, c.index)).collect();
    let want: Vec<(u64, u64)> = (0..).zip(doc.iter().map(|&b| u64::from(b))).collect();
    assert_eq!(seen, want);
    // The cap: two contributions and the flag.
    let (capped, truncated, _) = explain_via_abi(histogram, doc, Some(2), None, true).unwrap();
    assert_eq!((capped.len(), truncated), (2, true));
    // Bad caps are refused in the core's words; a negative one too.
    let core = |m, t| {
        rustfx::explain::ExplainOptions::new(m, t, false)
            .unwrap_err()
            .to_string()
    };
    let refused = |m, t| explain_via_abi(histogram, doc, m, t, false).unwrap_err();
    assert_eq!(refused(Some(0), None), core(0, 0));
    assert_eq!(refused(None, Some(1 << 20)), core(1, 1 << 20));
    assert_eq!(
        refused(Some(-3), None),
        core(0, 0).replace("got 0", "got -3")
    );
    assert_eq!(
        refused(None, Some(-1)),
        core(1, 1 << 20).replace("got 1048576", "got -1")
    );
    // Null handles and pointers: null (or false), never a crash.
    let mut message = ptr::null_mut();
    // SAFETY: called below with a live or null extractor, `len` bytes at `doc` or a null `doc`
    // (refused unless `len` is 0), and a writable or null `message`.
    let null = |extractor, doc: *const u8, len, message| unsafe {
        rustfx_explain(
            extractor,
            doc,
            len,
            ptr::null(),
            ptr::null(),
            false,
            message,
        )
    };
    assert!(null(ptr::null(), doc.as_ptr(), 4, &mut message).is_null());
    // SAFETY: `message` was written by an entry point; freed once.
    unsafe { rustfx_message_free(message) };
    assert!(null(histogram, ptr::null(), 4, ptr::null_mut()).is_null());
    // An empty document may be null.
    let empty = null(histogram, ptr::null(), 0, ptr::null_mut());
    assert!(!empty.is_null());
    // SAFETY: from `rustfx_explain`, freed once.
    unsafe { rustfx_explanation_free(empty) };
    let (mut data, mut len, mut flag) = (ptr::null(), 0, false);
    // SAFETY: a null explanation is refused; the outs are writable.
    assert!(!unsafe { rustfx_explanation_array(ptr::null(), 0, &mut data, &mut len) });
    // SAFETY: as above.
    assert!(!unsafe { rustfx_explanation_truncated(ptr::null(), &mut flag) });
    // SAFETY: as above.
    assert!(!unsafe { rustfx_explanation_combine(ptr::null(), &mut data, &mut len) });
    let handle = null(histogram, doc.as_ptr(), 4, ptr::null_mut());
    // SAFETY: `handle` came from `rustfx_explain`; the outs are writable (column 6 is refused).
    assert!(!unsafe { rustfx_explanation_array(handle, 6, &mut data, &mut len) });
    // SAFETY: `handle` came from `rustfx_explain`; a null out is refused.
    assert!(!unsafe { rustfx_explanation_truncated(handle, ptr::null_mut()) });
    // SAFETY: from `rustfx_explain`, freed once.
    unsafe { rustfx_explanation_free(handle) };
    // SAFETY: freeing null does nothing.
    unsafe { rustfx_explanation_free(ptr::null_mut()) };
    // SAFETY: from `rustfx_extractor_new`, freed once.
    unsafe { rustfx_extractor_free(histogram) };
}

/// The message an entry point wrote (freed).
fn taken(message: *mut c_char) -> String {
    assert!(!message.is_null());
    // SAFETY: written by `report`, NUL-terminated.
    let text = unsafe { std::ffi::CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: `message` was written by an entry point; freed once.
    unsafe { rustfx_message_free(message) };
    text
}

#[test]
fn the_feature_cache_gives_what_extract_gives() {
    let dir = std::env::temp_dir().join(format!("rustfx-capi-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.to_str().unwrap();
    let mut message = ptr::null_mut();
    // Bad options: null and the core's message, saying what is allowed.
    // SAFETY: `path.len()` bytes at `path`, 5 at the key; `message` is writable.
    let cache = unsafe {
        rustfx_cache_open(
            path.as_ptr(),
            path.len(),
            ptr::null(),
            b"mtime".as_ptr(),
            5,
            false,
            &mut message,
        )
    };
    assert!(cache.is_null());
    assert!(taken(message).contains("content, stat"));
    let zero = 0u64;
    // SAFETY: as above, 7 bytes at the key and a readable `max_bytes`.
    let cache = unsafe {
        rustfx_cache_open(
            path.as_ptr(),
            path.len(),
            &zero,
            b"content".as_ptr(),
            7,
            false,
            &mut message,
        )
    };
    assert!(cache.is_null());
    assert!(taken(message).contains("max_bytes must be from"));
    // SAFETY: as above, 7 bytes at the key.
    let cache = unsafe {
        rustfx_cache_open(
            path.as_ptr(),
            path.len(),
            ptr::null(),
            b"content".as_ptr(),
            7,
            false,
            &mut message,
        )
    };
    assert!(!cache.is_null());
    let spec =
        r#"{"extractor": "hashed_ngrams", "params": {"num_buckets": 64, "output": "sparse"}}"#;
    let docs = rustfx_documents_new(3);
    for (i, doc) in [&b"a b a"[..], b"", b"c d"].iter().enumerate() {
        let set =
            // SAFETY: `docs` came from `rustfx_documents_new`; `doc.len()` bytes at `doc`.
            unsafe { rustfx_documents_set(docs, i, doc.as_ptr(), doc.len(), 0, ptr::null(), 0) };
        assert!(set);
    }
    let e = extractor(spec);
    // SAFETY: both handles came from their constructors; `message` is writable.
    let want = exported(unsafe { rustfx_extract(e, docs, &mut message) }, spec);
    for epoch in 0..2 {
        let got =
            // SAFETY: handles from their constructors; `spec.len()` bytes at `spec`.
            unsafe { rustfx_cache_extract(cache, spec.as_ptr(), spec.len(), docs, &mut message) };
        assert!(exported(got, spec).same_bits(&want), "epoch {epoch}");
    }
    let mut found = [false; 3];
    // SAFETY: as above; room for 3 bools at `found`.
    let got = unsafe {
        rustfx_cache_get(
            cache,
            spec.as_ptr(),
            spec.len(),
            docs,
            found.as_mut_ptr(),
            &mut message,
        )
    };
    assert_eq!(found, [true; 3]);
    assert!(exported(got, spec).same_bits(&want));
    let mut stats = [0u64; CACHE_STATS];
    // SAFETY: `cache` came from `rustfx_cache_open`; room for `CACHE_STATS` values.
    assert!(unsafe { rustfx_cache_stats(cache, stats.as_mut_ptr(), &mut message) });
    assert_eq!(stats[..2], [6, 3], "hits, misses");
    assert_eq!(stats[4..6], [0, 0], "dropped, errors");
    assert_eq!(stats[6], 3, "entries");
    // SAFETY: `cache` came from `rustfx_cache_open`; `message` is writable.
    assert!(unsafe { rustfx_cache_flush(cache, &mut message) });
    // Null handles are refused, not followed.
    // SAFETY: a null cache is refused; the rest as above.
    let none = unsafe {
        rustfx_cache_extract(
            ptr::null_mut(),
            spec.as_ptr(),
            spec.len(),
            docs,
            &mut message,
        )
    };
    assert!(none.is_null());
    assert!(taken(message).contains("null feature cache"));
    // SAFETY: each came from its constructor, freed once.
    unsafe {
        rustfx_extractor_free(e);
        rustfx_documents_free(docs);
        rustfx_cache_free(cache);
    }
    std::fs::remove_dir_all(dir).unwrap();
}
