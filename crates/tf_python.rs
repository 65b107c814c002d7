//! Asks the Python that has TensorFlow about it: shared by the build
//! scripts of the op library (build.rs) and of rustfx-predict.
use std::env;
use std::path::PathBuf;
use std::process::Command;

/// $PYTHON, else the workspace's .venv, else python3.
pub fn python() -> String {
    env::var("PYTHON").unwrap_or_else(|_| {
        let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
        manifest
            .ancestors()
            .map(|dir| dir.join(".venv/bin/python"))
            .find(|venv| venv.exists())
            .map_or_else(|| "python3".to_string(), |venv| venv.display().to_string())
    })
}

/// The standard output of `script` (which imports tensorflow) run by
/// [`python`]; panics with what to do if TensorFlow cannot be imported.
pub fn ask(script: &str) -> String {
    let python = python();
    let output = Command::new(&python)
        .args(["-c", script])
        .env("TF_CPP_MIN_LOG_LEVEL", "3")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python} to ask TensorFlow: {e}"));
    if !output.status.success() {
        panic!(
            "{python} could not import tensorflow (set PYTHON to a Python with \
             tensorflow-cpu installed, or TF_CFLAGS, TF_LFLAGS and TF_VERSION):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8_lossy(&output.stdout).into_owned()
}
