//! Without the `tensorflow` feature this does nothing: the crate is a plain
//! Rust library. With it, this compiles the cxx bridge and the kernels in
//! `cpp/` against TensorFlow and links them whole into the cdylib (see
//! BUILD_NOTES.md for why each flag is there).

fn main() {
    #[cfg(feature = "tensorflow")]
    tensorflow::build();
    #[cfg(feature = "predict")]
    tf_c_api::build();
}

#[cfg(feature = "tensorflow")]
mod tensorflow {
    use std::env;
    use std::path::PathBuf;

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
        let script = "import tensorflow as tf\n\
                      print(' '.join(tf.sysconfig.get_compile_flags()))\n\
                      print(' '.join(tf.sysconfig.get_link_flags()))\n\
                      print('-version=' + tf.__version__)";
        let stdout = super::tf_python::ask(script);
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

/// With the `predict` feature: Rust declarations of TensorFlow's C API,
/// generated by bindgen from the headers of the TF this finds, and the link
/// arguments of `rustfx-predict`, which calls that API (src/tf_c_api/,
/// BUILD_NOTES.md "TensorFlow's C API for rustfx-predict").
#[cfg(feature = "predict")]
mod tf_c_api {
    use std::env;
    use std::path::PathBuf;
    use std::process::Command;

    const WRAPPER: &str = "src/tf_c_api/wrapper.h";

    pub fn build() {
        for var in [
            "PYTHON",
            "TF_CFLAGS",
            "TF_LFLAGS",
            "TF_VERSION",
            "LIBCLANG_PATH",
        ] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        println!("cargo:rerun-if-changed={WRAPPER}");
        let tf = find_tensorflow();

        let mut builder = bindgen::Builder::default()
            .header(WRAPPER)
            .clang_arg(format!("-I{}", tf.include.display()))
            // Only the C API's own names: not libc's, not TF's inline helpers.
            .allowlist_function("TF_.*")
            .allowlist_type("TF_.*")
            .allowlist_var("TF_.*")
            // TF 2.13+ defines TF_Status and TF_Code as TSL_Status and TSL_Code.
            .allowlist_type("TSL_.*")
            // C enums become newtypes with associated constants: a value TF
            // adds later is still a valid Rust value (a Rust enum would be UB).
            .newtype_enum("TF_.*")
            .newtype_enum("TSL_.*")
            .layout_tests(true)
            .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
        // libclang from the `libclang` wheel has no resource directory, so
        // it lacks the compiler's own headers (stddef.h): take the C
        // compiler's, searched after any libclang does have.
        if let Some(dir) = compiler_include_dir() {
            builder = builder.clang_arg(format!("-idirafter{}", dir.display()));
        }
        let bindings = builder.generate().unwrap_or_else(|e| {
            panic!(
                "bindgen could not generate TensorFlow's C API from {}: {e}\n\
                 (bindgen needs libclang: `make predict` installs the `libclang` wheel \
                 into .venv and sets LIBCLANG_PATH; or apt-get install libclang-dev)",
                tf.include.display()
            )
        });
        let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("tf_c_api.rs");
        bindings
            .write_to_file(&out)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));

        // The C API's symbols are in libtensorflow_cc.so.2 (session, saved
        // model, library loading) and libtensorflow_framework.so.2 (status,
        // buffer, tensor); the rpath lets the program run outside Python.
        // `tf_c_api` is a library module whose callers are `rustfx-predict`
        // and the library's own unit tests, and cargo has no link-argument
        // instruction for a library's unit tests alone: these go to every
        // linked target, each library under `--as-needed`, so only programs
        // that call the C API depend on it. The cdylib (the op library)
        // exports nothing that reaches `tf_c_api` and records no dependency
        // (`readelf -d`); it is built without `predict` anyway.
        let lib = tf.lib.display();
        for arg in [
            format!("-L{lib}"),
            "-Wl,--push-state,--as-needed".to_string(),
            "-l:libtensorflow_cc.so.2".to_string(),
            "-l:libtensorflow_framework.so.2".to_string(),
            "-Wl,--pop-state".to_string(),
            format!("-Wl,-rpath,{lib}"),
        ] {
            println!("cargo:rustc-link-arg={arg}");
        }
        println!("cargo:rustc-env=RUSTFX_TF_C_API_VERSION={}", tf.version);
    }

    struct TensorFlow {
        include: PathBuf,
        lib: PathBuf,
        version: String,
    }

    /// TF's include and library directories and version: from TF_CFLAGS
    /// (`-I`), TF_LFLAGS (`-L`) and TF_VERSION if all are set (as for the op
    /// library), else from `tf.sysconfig` run by $PYTHON (default: the
    /// project's .venv, else python3).
    fn find_tensorflow() -> TensorFlow {
        if let (Ok(c), Ok(l), Ok(v)) = (
            env::var("TF_CFLAGS"),
            env::var("TF_LFLAGS"),
            env::var("TF_VERSION"),
        ) {
            let find = |flags: &str, prefix: &str| {
                flags
                    .split_whitespace()
                    .find_map(|f| f.strip_prefix(prefix))
                    .map(PathBuf::from)
                    .unwrap_or_else(|| panic!("no {prefix} directory in {flags:?}"))
            };
            return TensorFlow {
                include: find(&c, "-I"),
                lib: find(&l, "-L"),
                version: v,
            };
        }
        let script = "import tensorflow as tf\n\
                      print('-include=' + tf.sysconfig.get_include())\n\
                      print('-lib=' + tf.sysconfig.get_lib())\n\
                      print('-version=' + tf.__version__)";
        let stdout = super::tf_python::ask(script);
        let python = super::tf_python::python();
        let value = |key: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("no {key} line from {python}: {stdout}"))
                .to_string()
        };
        TensorFlow {
            include: PathBuf::from(value("-include=")),
            lib: PathBuf::from(value("-lib=")),
            version: value("-version="),
        }
    }

    /// The C compiler's own include directory (`cc -print-file-name=include`),
    /// if it has one with stddef.h.
    fn compiler_include_dir() -> Option<PathBuf> {
        let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
        let output = Command::new(cc)
            .arg("-print-file-name=include")
            .output()
            .ok()?;
        let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        dir.join("stddef.h").exists().then_some(dir)
    }
}

/// Asks the Python that has TensorFlow about it: shared by the op library
/// (`tensorflow`) and `rustfx-predict` (`predict`).
#[cfg(any(feature = "tensorflow", feature = "predict"))]
mod tf_python {
    use std::env;
    use std::path::PathBuf;
    use std::process::Command;

    /// $PYTHON, else the project's .venv, else python3.
    pub fn python() -> String {
        env::var("PYTHON").unwrap_or_else(|_| {
            let venv =
                PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join(".venv/bin/python");
            if venv.exists() {
                venv.display().to_string()
            } else {
                "python3".to_string()
            }
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
}
