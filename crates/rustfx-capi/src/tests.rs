// The calls follow the module's contract: handles from their `_new`,
// buffers with their lengths.
use super::*;

fn extractor(spec: &str) -> *mut Extractor {
    let mut message = ptr::null_mut();
    let e = unsafe { rustfx_extractor_new(spec.as_ptr(), spec.len(), &mut message) };
    assert!(!e.is_null());
    e
}

fn array<T: Copy>(output: *const Output, which: u32) -> Vec<T> {
    let (mut data, mut len) = (ptr::null(), 0);
    assert!(unsafe { rustfx_output_array(output, which, &mut data, &mut len) });
    if len == 0 {
        return Vec::new();
    }
    // SAFETY: the array holds `len` values of T.
    unsafe { std::slice::from_raw_parts(data.cast::<T>(), len).to_vec() }
}

#[test]
fn a_bad_spec_is_null_and_the_cores_message() {
    let spec = r#"{"extractor": "byte_histogram", "params": {"x": 1}}"#;
    let mut message = ptr::null_mut();
    let e = unsafe { rustfx_extractor_new(spec.as_ptr(), spec.len(), &mut message) };
    assert!(e.is_null());
    // SAFETY: `message` was written by `report`.
    let text = unsafe { std::ffi::CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    unsafe { rustfx_message_free(message) };
    assert_eq!(
        text,
        rustfx::spec::load(spec).unwrap_err().to_string(),
        "the message is the core's"
    );
    // No room for a message: still null, nothing written.
    assert!(unsafe { rustfx_extractor_new(spec.as_ptr(), spec.len(), ptr::null_mut()) }.is_null());
}

/// `rustfx_spec_query`'s answer (the JSON array's strings) or message.
fn query(what: &str, spec: &str) -> std::result::Result<Vec<String>, String> {
    let (mut answer, mut len, mut message) = (ptr::null_mut(), 0, ptr::null_mut());
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
    unsafe { rustfx_message_free(message) };
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
        unsafe { rustfx_documents_read(documents, 0, path.as_ptr(), path.len(), 5) },
        0
    );
    let missing = dir.join("missing");
    let missing = missing.to_str().unwrap();
    let code = unsafe { rustfx_documents_read(documents, 1, missing.as_ptr(), missing.len(), 5) };
    let expected = read_file(missing.as_bytes(), 5).unwrap_err();
    assert_eq!(code, expected.kind().status_code());
    assert_eq!(code, 5, "NOT_FOUND");
    let (mut data, mut len) = (ptr::null(), 0);
    assert!(unsafe { rustfx_documents_message(documents, 1, &mut data, &mut len) });
    // SAFETY: the message is `len` bytes at `data`.
    let message = unsafe { std::slice::from_raw_parts(data, len) };
    assert_eq!(message, expected.to_string().as_bytes());
    assert!(unsafe { rustfx_documents_set(documents, 2, b"xyz".as_ptr(), 3) });
    // Wrong calls fail without touching anything.
    assert_eq!(
        unsafe { rustfx_documents_read(documents, 3, path.as_ptr(), path.len(), 5) },
        -1
    );
    assert_eq!(
        unsafe { rustfx_documents_read(documents, 0, path.as_ptr(), path.len(), -1) },
        -1
    );
    assert!(!unsafe { rustfx_documents_set(ptr::null_mut(), 0, ptr::null(), 0) });

    let (mut sizes, mut hex) = ([0i64; 3], [0u8; 192]);
    assert!(unsafe { rustfx_documents_digest(documents, sizes.as_mut_ptr(), hex.as_mut_ptr()) });
    assert_eq!(sizes, [5, 0, 3]);
    assert_eq!(&hex[..64], sha256_hex(b"hello").as_bytes());
    assert_eq!(&hex[128..], sha256_hex(b"xyz").as_bytes());

    let docs: [&[u8]; 3] = [b"hello", b"", b"xyz"];
    let histogram = extractor(r#"{"extractor": "byte_histogram"}"#);
    let output = unsafe { rustfx_extract(histogram, documents, ptr::null_mut()) };
    let Extractor::Float32Rows(core) = rustfx::spec::load(r#"{"extractor": "byte_histogram"}"#)
        .unwrap()
        .1
    else {
        panic!("byte_histogram has float32 rows")
    };
    let mut want = vec![0.0f32; 3 * core.width()];
    core.write_rows(&docs, &mut want).unwrap();
    assert_eq!(array::<f32>(output, VALUES), want);
    assert!(array::<i64>(output, ROW_SPLITS).is_empty());
    unsafe { rustfx_output_free(output) };
    unsafe { rustfx_extractor_free(histogram) };

    let spec = r#"{"extractor": "hashed_ngrams", "params": {"num_buckets": 64, "ngram_widths": [1], "tokenizer": "byte"}}"#;
    let ngrams = extractor(spec);
    let output = unsafe { rustfx_extract(ngrams, documents, ptr::null_mut()) };
    let Extractor::RaggedIds(core) = rustfx::spec::load(spec).unwrap().1 else {
        panic!("byte n-gram ids are ragged")
    };
    let (mut ids, mut ends) = (Vec::new(), Vec::new());
    core.append_id_rows(&docs, &mut ids, &mut ends);
    assert_eq!(array::<i64>(output, VALUES), ids);
    assert_eq!(array::<i64>(output, ROW_SPLITS), [0, 5, 5, 8]);
    unsafe { rustfx_output_free(output) };
    unsafe { rustfx_extractor_free(ngrams) };

    let strings = extractor(
        r#"{"extractor": "printable_strings", "params": {"min_len": 3, "encodings": ["ascii"]}}"#,
    );
    let output = unsafe { rustfx_extract(strings, documents, ptr::null_mut()) };
    assert_eq!(array::<u8>(output, VALUES), b"helloxyz");
    assert_eq!(array::<i64>(output, STRING_ENDS), [5, 8]);
    assert_eq!(array::<i64>(output, ROW_SPLITS), [0, 1, 1, 2]);
    unsafe { rustfx_output_free(output) };
    unsafe { rustfx_extractor_free(strings) };
    unsafe { rustfx_documents_free(documents) };
    std::fs::remove_dir_all(&dir).unwrap();
}
