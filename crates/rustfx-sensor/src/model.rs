//! [`Model`]: a sensor model directory loaded and run with tract.
//!
//! Loading reads both files like `read_file` does (bounded, never blocking
//! on a FIFO), parses features.json with the core's spec parser, parses
//! model.onnx with tract, matches the ONNX graph's inputs and outputs to
//! features.json by name, checks each input's dtype and width against its
//! spec, and optimizes the graph once, with the batch dimension left
//! symbolic. Every tract call runs under `catch_unwind`: a hostile
//! model.onnx that makes tract panic is an error naming the file, not an
//! abort (the release profile keeps `panic = "unwind"`).

use super::features::Features;
use rustfx::output::Batch;
use rustfx::output::DType;
use rustfx::read::read_file;
use rustfx::{Error, ErrorKind, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use tract_onnx::prelude::tract_data::internal::{ensure, format_err, DimLike, TractErrorContext};
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

/// The features file of a sensor model directory.
pub const FEATURES_FILE: &str = "features.json";
/// The ONNX file of a sensor model directory.
pub const MODEL_FILE: &str = "model.onnx";
/// The largest model.onnx accepted (protobuf's own limit is 2 GiB).
pub const MAX_MODEL_BYTES: u64 = (1 << 31) - 1;

/// One output of a prediction: `rows` rows of `values.len() / rows` values.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// Its key in features.json (`output_0`, ...).
    pub key: String,
    /// The tensor's shape; the first dimension is the batch.
    pub shape: Vec<usize>,
    /// The values, row after row.
    pub values: OutputValues,
}

/// The values of an output, by dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputValues {
    /// float32.
    F32(Vec<f32>),
    /// float64.
    F64(Vec<f64>),
    /// int32.
    I32(Vec<i32>),
    /// int64.
    I64(Vec<i64>),
    /// bool.
    Bool(Vec<bool>),
}

impl OutputValues {
    /// How many values.
    pub fn len(&self) -> usize {
        match self {
            OutputValues::F32(v) => v.len(),
            OutputValues::F64(v) => v.len(),
            OutputValues::I32(v) => v.len(),
            OutputValues::I64(v) => v.len(),
            OutputValues::Bool(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A model exported by `rustfx.sensor.export`: FX by the core, then the
/// network by tract. Immutable: one instance serves many threads.
pub struct Model {
    dir: PathBuf,
    features: Features,
    plan: Arc<TypedRunnableModel>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("dir", &self.dir)
            .field("features", &self.features)
            .finish_non_exhaustive()
    }
}

impl Model {
    /// Loads `dir/features.json` and `dir/model.onnx`. Every error names the
    /// file it is about.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        let features_path = dir.join(FEATURES_FILE);
        let text = read_file(
            features_path.as_os_str().as_encoded_bytes(),
            super::features::MAX_FEATURES_BYTES as u64 + 1,
        )?;
        let text = String::from_utf8(text)
            .map_err(|_| file_error(&features_path, "it is not UTF-8 text (a corrupted file?)"))?;
        let features =
            Features::from_json(&text).map_err(|e| file_error(&features_path, e.message()))?;

        let model_path = dir.join(MODEL_FILE);
        let bytes = read_file(
            model_path.as_os_str().as_encoded_bytes(),
            MAX_MODEL_BYTES + 1,
        )?;
        if bytes.len() as u64 > MAX_MODEL_BYTES {
            return Err(file_error(&model_path, "it is larger than 2 GiB"));
        }
        let plan = guarded(&model_path, || plan(&bytes, &features))?;
        Ok(Model {
            dir,
            features,
            plan,
        })
    }

    /// The directory the model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its features.json.
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// The features the network gets for `docs`, one batch per ONNX input.
    pub fn extract(&self, docs: &[&[u8]]) -> Result<Vec<Batch>> {
        self.features.extract(docs)
    }

    /// Runs the model on a batch of file contents: every output, in
    /// features.json's order, with one row per document.
    pub fn predict(&self, docs: &[&[u8]]) -> Result<Vec<Output>> {
        let rows = self.features.extract(docs)?;
        let n = docs.len();
        let model_path = self.dir.join(MODEL_FILE);
        let outputs = guarded(&model_path, || {
            let inputs = rows
                .into_iter()
                .zip(&self.features.features)
                .map(|(rows, _)| input_tensor(rows))
                .collect::<TractResult<TVec<TValue>>>()?;
            self.plan.run(inputs)
        })?;
        outputs
            .iter()
            .zip(&self.features.outputs)
            .map(|(value, name)| {
                let shape = value.shape().to_vec();
                if shape.first() != Some(&n) {
                    return Err(file_error(
                        &model_path,
                        &format!(
                            "output '{}' has shape {shape:?}; every output needs one row \
                             per file, so its first dimension must be the batch size {n}",
                            name.key
                        ),
                    ));
                }
                let values = output_values(value).map_err(|dtype| {
                    file_error(
                        &model_path,
                        &format!("output '{}' is {dtype}, which rustfx cannot read", name.key),
                    )
                })?;
                Ok(Output {
                    key: name.key.clone(),
                    shape,
                    values,
                })
            })
            .collect()
    }
}

/// Parses the ONNX bytes, checks them against features.json and optimizes.
fn plan(bytes: &[u8], features: &Features) -> TractResult<Arc<TypedRunnableModel>> {
    let mut model = tract_onnx::onnx()
        .model_for_read(&mut &bytes[..])
        .context("not a valid ONNX model")?;
    // Feed the inputs in features.json's order, whatever the graph's.
    let sources: Vec<String> = model
        .input_outlets()?
        .iter()
        .map(|o| model.node(o.node).name.clone())
        .collect();
    let inputs = features
        .features
        .iter()
        .map(|f| {
            let at = sources.iter().position(|s| *s == f.onnx_input);
            let at = at.ok_or_else(|| {
                format_err!(
                    "it has no input '{}', which features.json feeds from layer '{}'; its \
                     inputs are {sources:?}",
                    f.onnx_input,
                    f.layer
                )
            })?;
            Ok(model.input_outlets()?[at])
        })
        .collect::<TractResult<Vec<_>>>()?;
    ensure!(
        inputs.len() == sources.len(),
        "it has {} inputs ({sources:?}) but features.json feeds {}",
        sources.len(),
        inputs.len()
    );
    model.set_input_outlets(&inputs)?;
    let labels: Vec<String> = model
        .output_outlets()?
        .iter()
        .map(|o| model.outlet_label(*o).unwrap_or_default().to_string())
        .collect();
    let outputs = features
        .outputs
        .iter()
        .map(|o| {
            let at = labels.iter().position(|l| *l == o.onnx_output);
            let at = at.ok_or_else(|| {
                format_err!(
                    "it has no output '{}' (features.json's '{}'); its outputs are {labels:?}",
                    o.onnx_output,
                    o.key
                )
            })?;
            Ok(model.output_outlets()?[at])
        })
        .collect::<TractResult<Vec<_>>>()?;
    model.select_output_outlets(&outputs)?;
    // One batch symbol for every input (the export gives each its own,
    // which tract cannot unify where the features meet, at Concat).
    let batch = TDim::from(model.symbols.sym("N"));
    for (i, feature) in features.features.iter().enumerate() {
        let dtype = datum_type(feature.extractor.output().dtype)?;
        // Padded ragged rows: as long as each batch's longest row.
        let width = match feature.width {
            Some(width) => width.to_dim(),
            None => TDim::from(model.symbols.sym(&format!("L{i}"))),
        };
        let declared = model.input_fact(i)?.clone();
        let dtype_ok = declared.datum_type.concretize().is_none_or(|d| d == dtype);
        let shape_ok = declared.shape.concretize().is_none_or(|dims| {
            dims.len() == 2
                && match feature.width {
                    Some(w) => dims[1].to_usize().is_ok_and(|d| d == w),
                    None => dims[1].to_usize().is_err(),
                }
        });
        ensure!(
            dtype_ok && shape_ok,
            "its input '{}' is {declared:?}, but layer '{}' ({}) gives {dtype:?} rows of {width}",
            feature.onnx_input,
            feature.layer,
            feature.spec.extractor()
        );
        model.set_input_fact(i, InferenceFact::dt_shape(dtype, [batch.clone(), width]))?;
    }
    let model = model.into_typed().context("cannot type the graph")?;
    model
        .into_optimized()
        .context("cannot optimize the graph")?
        .into_runnable()
}

/// A batch of dense rows as the network's input tensor (`rows x width`):
/// the sensor's conversion of the core's [`Batch`]. features.json accepts
/// dense features only (`dense_width`), so other layouts are a bug.
fn input_tensor(batch: Batch) -> TractResult<TValue> {
    fn matrix<T: Datum + rustfx::output::Element>(batch: Batch) -> TractResult<Tensor> {
        let rows = batch.into_dense::<T>()?;
        Ok(tract_ndarray::Array2::from_shape_vec((rows.rows, rows.width), rows.values)?.into())
    }
    macro_rules! by_dtype {
        ($($variant:ident $t:ty),+) => {
            match batch.values().dtype() {
                $(DType::$variant => matrix::<$t>(batch)?,)+
                DType::String => return Err(format_err!("string features cannot feed the model")),
            }
        };
    }
    let tensor = rustfx::numeric_dtypes!(by_dtype);
    Ok(tensor.into_tvalue())
}

/// The tract datum type of a dtype: the sensor's one dtype table.
fn datum_type(dtype: DType) -> TractResult<DatumType> {
    macro_rules! table {
        ($($variant:ident $t:ty),+) => {
            match dtype {
                $(DType::$variant => Ok(<$t>::datum_type()),)+
                DType::String => Err(format_err!("string features cannot feed the model")),
            }
        };
    }
    rustfx::numeric_dtypes!(table)
}

/// The values of a tract output, or its dtype's name if unsupported.
fn output_values(value: &TValue) -> std::result::Result<OutputValues, String> {
    fn plain<T: Datum + Clone>(value: &TValue) -> std::result::Result<Vec<T>, String> {
        value
            .to_plain_array_view::<T>()
            .map(|view| view.iter().cloned().collect())
            .map_err(|e| format!("{e}"))
    }
    let dtype = value.datum_type();
    if dtype == f32::datum_type() {
        plain(value).map(OutputValues::F32)
    } else if dtype == f64::datum_type() {
        plain(value).map(OutputValues::F64)
    } else if dtype == i32::datum_type() {
        plain(value).map(OutputValues::I32)
    } else if dtype == i64::datum_type() {
        plain(value).map(OutputValues::I64)
    } else if dtype == bool::datum_type() {
        plain(value).map(OutputValues::Bool)
    } else {
        Err(format!("{dtype:?}"))
    }
}

/// Runs a tract call; its error or panic becomes an error naming `path`.
fn guarded<T>(path: &Path, f: impl FnOnce() -> TractResult<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(value)) => Ok(value),
        // `{:#}`: tract's context chain on one line.
        Ok(Err(e)) => Err(file_error(path, &format!("{e:#}"))),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_string());
            Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "'{}': tract panicked on it ({what}); a corrupted or unsupported model?",
                    path.display()
                ),
            ))
        }
    }
}

fn file_error(path: &Path, message: &str) -> Error {
    Error::invalid_argument(format!("'{}': {message}", path.display()))
}
