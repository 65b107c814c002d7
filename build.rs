//! Without the `tensorflow` feature this does nothing: the crate is a plain
//! Rust library. With it, this compiles the cxx bridge and the kernels in
//! `cpp/` against TensorFlow and links them whole into the cdylib (see
//! BUILD_NOTES.md for why each flag is there).

fn main() {
    #[cfg(feature = "tensorflow")]
    tensorflow::build();
}

#[cfg(feature = "tensorflow")]
mod tensorflow {
    use std::env;
    use std::path::PathBuf;
    use std::process::Command;

    pub fn build() {
        for var in ["PYTHON", "TF_CFLAGS", "TF_LFLAGS", "TF_VERSION", "CXXFLAGS"] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        println!("cargo:rerun-if-changed=src/bridge.rs");
        println!("cargo:rerun-if-changed=cpp");

        let (cflags, lflags, version) = tf_flags();
        check_abi_flag(&cflags);

        let mut sources: Vec<PathBuf> = std::fs::read_dir("cpp")
            .expect("cpp/ exists")
            .map(|entry| entry.expect("readable cpp/ entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "cc"))
            .collect();
        sources.sort();

        let mut build = cxx_build::bridge("src/bridge.rs");
        build.files(&sources).include("cpp").opt_level(2);
        // TF's headers are noisy; our own code is kept warning-free by review.
        build
            .warnings(false)
            .flag_if_supported("-Wno-deprecated-declarations");
        for flag in &cflags {
            build.flag(flag);
        }
        // TF's headers no longer carry its version (Bazel passes it), so we
        // record the version that gave us these flags; see cpp/version.cc.
        build.define("RUSTFX_TF_VERSION", format!("\"{version}\"").as_str());
        // The op and kernel registrations are static initializers nothing
        // references: without +whole-archive the linker drops them.
        build.link_lib_modifier("+whole-archive");
        build.compile("rustfx_kernels");

        for flag in &lflags {
            if let Some(dir) = flag.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={dir}");
                // Lets the library also load outside Python (C++ tests, serving).
                println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,{dir}");
                // Installed from a wheel, rustfx/ sits beside tensorflow/ in
                // site-packages, wherever the build's TF was.
                println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN/../tensorflow");
            } else if let Some(lib) = flag.strip_prefix("-l:") {
                println!("cargo:rustc-link-lib=dylib:+verbatim={lib}");
            } else if let Some(lib) = flag.strip_prefix("-l") {
                println!("cargo:rustc-link-lib=dylib={lib}");
            } else {
                println!("cargo:rustc-cdylib-link-arg={flag}");
            }
        }
    }

    /// TF's compile and link flags and version: from TF_CFLAGS / TF_LFLAGS /
    /// TF_VERSION if all are set, else from `tf.sysconfig` and `tf.__version__`
    /// run by $PYTHON (default: the project's .venv, else python3).
    fn tf_flags() -> (Vec<String>, Vec<String>, String) {
        if let (Ok(c), Ok(l), Ok(v)) = (
            env::var("TF_CFLAGS"),
            env::var("TF_LFLAGS"),
            env::var("TF_VERSION"),
        ) {
            return (split(&c), split(&l), v);
        }
        let python = env::var("PYTHON").unwrap_or_else(|_| {
            let venv =
                PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join(".venv/bin/python");
            if venv.exists() {
                venv.display().to_string()
            } else {
                "python3".to_string()
            }
        });
        let script = "import tensorflow as tf\n\
                      print(' '.join(tf.sysconfig.get_compile_flags()))\n\
                      print(' '.join(tf.sysconfig.get_link_flags()))\n\
                      print('-version=' + tf.__version__)";
        let output = Command::new(&python)
            .args(["-c", script])
            .env("TF_CPP_MIN_LOG_LEVEL", "3")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {python} to ask TensorFlow for its flags: {e}"));
        if !output.status.success() {
            panic!(
                "{python} could not import tensorflow (set PYTHON to a Python with \
                 tensorflow-cpu installed, or TF_CFLAGS, TF_LFLAGS and TF_VERSION):\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let mut lines = stdout.lines().filter(|l| l.starts_with('-'));
        let cflags = split(lines.next().expect("compile flags line"));
        let lflags = split(lines.next().expect("link flags line"));
        let version = lines
            .next()
            .and_then(|l| l.strip_prefix("-version="))
            .expect("version line")
            .to_string();
        (cflags, lflags, version)
    }

    fn split(flags: &str) -> Vec<String> {
        flags.split_whitespace().map(str::to_string).collect()
    }

    /// The cxx runtime (cxx.cc) is compiled by the cxx crate's own build
    /// script, which only sees CXXFLAGS: warn if it may use another ABI.
    fn check_abi_flag(cflags: &[String]) {
        let abi = cflags
            .iter()
            .find(|f| f.starts_with("-D_GLIBCXX_USE_CXX11_ABI="));
        if let Some(abi) = abi {
            let cxxflags = env::var("CXXFLAGS").unwrap_or_default();
            if !cxxflags.contains(abi.as_str()) {
                println!(
                    "cargo:warning=TensorFlow uses {abi} but CXXFLAGS does not pass it to the cxx \
                     runtime; build with `make build` or export CXXFLAGS={abi}"
                );
            }
        }
    }
}
