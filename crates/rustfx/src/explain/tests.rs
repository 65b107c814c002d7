use super::*;

#[test]
fn push_stops_at_the_cap_and_cuts_texts() {
    let options = ExplainOptions::new(2, 3, false).unwrap();
    let mut out = Contributions::new(&options);
    assert!(out.push(1, 0, 5, 1.0, b"hello"));
    assert!(out.push(2, 5, 1, 1.0, b""));
    assert!(!out.is_full());
    assert!(!out.push(3, 6, 1, 1.0, b"x"));
    assert!(out.is_full());
    let explanation = Explanation::new(out, "test", Box::new(|_| unreachable!()));
    assert!(explanation.truncated);
    assert_eq!(explanation.contributions.len(), 2);
    assert_eq!(explanation.contributions[0].text, b"hel");
    assert!(explanation.reassemble().is_err());
}

#[test]
fn sums_are_per_index_and_refuse_indices_past_the_width() {
    let options = ExplainOptions::default();
    let mut out = Contributions::new(&options);
    for (index, value) in [(0, 1.0), (2, 0.5), (0, 2.0)] {
        out.push(index, 0, 0, value, &[]);
    }
    assert_eq!(sums_by_index(&out.list, 3).unwrap(), vec![3.0, 0.0, 0.5]);
    let error = sums_by_index(&out.list, 2).unwrap_err();
    assert_eq!(error.kind(), crate::ErrorKind::Internal);
}

/// The memory bound the docs state: a contribution is 56 bytes plus its text.
#[test]
fn a_contribution_is_56_bytes_plus_its_text() {
    assert_eq!(std::mem::size_of::<Contribution>(), 56);
}
