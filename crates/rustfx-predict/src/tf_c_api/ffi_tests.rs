use super::*;

#[test]
fn string_tensor_round_trips() {
    // Empty, short (inline in TF_TString) and long (heap) strings, and
    // bytes that are not UTF-8 or hold a NUL.
    let long = vec![b'x'; 100_000];
    let items: [&[u8]; 5] = [b"", b"a", b"\0\xff\xfe", &long, b"exactly 22 bytes long!"];
    let tensor = Tensor::strings(&items).unwrap();
    assert_eq!(tensor.dtype(), crate::tf_c_api::DT_STRING);
    assert_eq!(tensor.shape(), [5]);
    assert_eq!(tensor.element_count(), 5);
    let expected: Vec<Vec<u8>> = items.iter().map(|i| i.to_vec()).collect();
    assert_eq!(tensor.values().unwrap(), Values::Bytes(expected));
}

/// Resident memory in KiB, from /proc/self/status.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn string_tensors_free_their_elements() {
    // 100 tensors of 4 MiB of heap strings: 400 MiB if TF_DeleteTensor
    // left the elements' copies behind.
    let item = vec![7u8; 1 << 20];
    let items: [&[u8]; 4] = [&item, &item, &item, &item];
    drop(Tensor::strings(&items).unwrap());
    let before = rss_kib();
    for _ in 0..100 {
        let tensor = Tensor::strings(&items).unwrap();
        assert_eq!(tensor.element_count(), 4);
    }
    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    assert!(grown_mib < 64, "RSS grew by {grown_mib} MiB");
}

#[test]
fn empty_string_tensor() {
    let tensor = Tensor::strings(&[]).unwrap();
    assert_eq!(tensor.shape(), [0]);
    assert_eq!(tensor.values().unwrap(), Values::Bytes(Vec::new()));
}

#[test]
fn version_is_the_linked_tensorflow() {
    let running = version();
    assert!(running.starts_with("2."), "{running}");
}

#[test]
fn errors_carry_tf_code_and_message() {
    let missing = Path::new("/nonexistent/rustfx-predict-test");
    let error = SavedModel::load(missing, &["serve"]).err().unwrap();
    assert!(error.to_string().starts_with("NOT_FOUND: "), "{error}");
    assert!(
        error.message().contains("/nonexistent/rustfx-predict-test"),
        "{error}"
    );

    let error = Library::load(Path::new("/etc/hostname")).err().unwrap();
    assert!(!error.message().is_empty(), "{error}");

    let error = SavedModel::load(Path::new("a\0b"), &["serve"])
        .err()
        .unwrap();
    assert!(error.message().contains("NUL"), "{error}");
}

#[test]
fn code_names() {
    assert_eq!(code_name(sys::TF_Code(0)), "OK");
    assert_eq!(code_name(sys::TF_Code(5)), "NOT_FOUND");
    assert_eq!(code_name(sys::TF_Code(16)), "UNAUTHENTICATED");
    assert_eq!(code_name(sys::TF_Code(999)), "UNKNOWN");
}
