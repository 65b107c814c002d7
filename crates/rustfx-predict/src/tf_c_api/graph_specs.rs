//! The rustfx ops of a SavedModel and their specs, read from its serialized
//! `MetaGraphDef` before anything runs: the C API's shape functions cannot
//! read a spec, so a spec this build refuses (another output version) is
//! found here, at load, rather than when the first batch runs.
//!
//! MetaGraphDef.graph_def (2) → GraphDef.node (1) and
//! GraphDef.library (2) → FunctionDefLibrary.function (1) →
//! FunctionDef.node_def (3); NodeDef.op (2), NodeDef.attr (5, a map entry:
//! key 1, value 2) → AttrValue.s (2).

use crate::wire::{bytes_fields, fields, Value};

/// Each node of the model's graph or of its functions whose op is a rustfx
/// op with a `spec` attr: (op, spec JSON). `None` if the bytes are not a
/// MetaGraphDef.
pub fn rustfx_specs(meta_graph_def: &[u8]) -> Option<Vec<(String, String)>> {
    let mut specs = Vec::new();
    for graph in bytes_fields(meta_graph_def, 2)? {
        let mut nodes = bytes_fields(graph, 1)?;
        for library in bytes_fields(graph, 2)? {
            for function in bytes_fields(library, 1)? {
                nodes.extend(bytes_fields(function, 3)?);
            }
        }
        for node in nodes {
            let op = bytes_fields(node, 2)?.last().copied().unwrap_or_default();
            if !op.starts_with(b"Rustfx>") {
                continue;
            }
            for entry in bytes_fields(node, 5)? {
                let entry = fields(entry)?;
                let field = |n| {
                    entry.iter().rev().find_map(|&(number, value)| match value {
                        Value::Bytes(b) if number == n => Some(b),
                        _ => None,
                    })
                };
                if field(1) != Some(b"spec".as_slice()) {
                    continue;
                }
                let spec = bytes_fields(field(2).unwrap_or_default(), 2)?
                    .last()
                    .copied()
                    .unwrap_or_default();
                specs.push((
                    String::from_utf8_lossy(op).into_owned(),
                    String::from_utf8_lossy(spec).into_owned(),
                ));
            }
        }
    }
    Some(specs)
}

/// The first rustfx spec of the model this build refuses, as the core's
/// message naming the op (a spec of another output version, a bad spec).
pub fn check_rustfx_specs(meta_graph_def: &[u8]) -> Result<(), String> {
    let specs = rustfx_specs(meta_graph_def)
        .ok_or_else(|| "the SavedModel's MetaGraphDef cannot be read".to_string())?;
    for (op, spec) in specs {
        rustfx::spec::load(&spec).map_err(|e| format!("its op {op} cannot run here: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(number: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(number << 3 | 2) as u8];
        let mut len = bytes.len();
        while len >= 0x80 {
            out.push((len as u8 & 0x7f) | 0x80);
            len >>= 7;
        }
        out.push(len as u8);
        out.extend_from_slice(bytes);
        out
    }

    fn node(op: &str, spec: &str) -> Vec<u8> {
        let attr = [field(1, b"spec"), field(2, &field(2, spec.as_bytes()))].concat();
        [field(1, b"name"), field(2, op.as_bytes()), field(5, &attr)].concat()
    }

    #[test]
    fn finds_specs_in_the_graph_and_its_functions_and_checks_them() {
        let good = r#"{"extractor":"byte_histogram"}"#;
        let bad = r#"{"extractor":"byte_histogram","output_version":999}"#;
        let function = field(3, &node("Rustfx>DenseRows", bad));
        let graph = [
            field(1, &node("Rustfx>RaggedIds", good)),
            field(1, &node("MatMul", "not a spec")),
            field(2, &field(1, &function)),
        ]
        .concat();
        let meta = field(2, &graph);
        assert_eq!(
            rustfx_specs(&meta).unwrap(),
            vec![
                ("Rustfx>RaggedIds".to_string(), good.to_string()),
                ("Rustfx>DenseRows".to_string(), bad.to_string()),
            ]
        );
        let message = check_rustfx_specs(&meta).unwrap_err();
        assert!(message.contains("Rustfx>DenseRows"), "{message}");
        assert!(
            message.contains("output version 999 of byte_histogram"),
            "{message}"
        );
        assert!(check_rustfx_specs(&field(2, &field(1, &node("Rustfx>X", good)))).is_ok());
        assert!(rustfx_specs(&[0x12, 0x05]).is_none());
    }
}
