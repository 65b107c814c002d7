//! The op library's build: compiles the cxx bridge and the kernels in
//! `cpp/` against TensorFlow's C API headers and links them whole into the
//! cdylib (see BUILD_NOTES.md for why each flag is there).

#[path = "crates/tf_python.rs"]
mod tf_python;

fn main() {
    // Without any rerun-if-changed, cargo would rerun this whenever any file
    // of the package changed (and scan the whole tree, venvs included).
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=crates/tf_python.rs");
    tensorflow::build();
}

mod tensorflow {
    use std::env;
    use std::path::PathBuf;

    /// The kernels include only TF's C API headers (tensorflow/c/*.h) and
    /// call only its `TF_*` functions, so the library needs no TF C++ ABI
    /// flag and loads into every TF whose C API it uses (BUILD_NOTES.md,
    /// "One op library for every TensorFlow").
    pub fn build() {
        for var in ["PYTHON", "TF_CFLAGS", "TF_LFLAGS", "TF_VERSION"] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        println!("cargo:rerun-if-changed=src/bridge.rs");
        println!("cargo:rerun-if-changed=cpp");

        let (cflags, lflags, version) = tf_flags();

        let mut sources: Vec<PathBuf> = std::fs::read_dir("cpp")
            .expect("cpp/ exists")
            .map(|entry| entry.expect("readable cpp/ entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "cc"))
            .collect();
        sources.sort();

        // The kernels include the bridge as "rustfx/src/bridge.rs.h".
        cxx_build::CFG.include_prefix = "rustfx";
        let mut build = cxx_build::bridge("src/bridge.rs");
        build
            .files(&sources)
            .include("cpp")
            .std("c++17")
            .opt_level(2);
        // Only TF's include directories: its other compile flags (the
        // libstdc++ ABI, Eigen's alignment) are for its C++ API.
        for flag in cflags.iter().filter(|f| f.starts_with("-I")) {
            build.flag(flag);
        }
        // The TF whose C API headers these kernels were compiled against,
        // for messages (cpp/version.cc).
        build.define("RUSTFX_TF_VERSION", format!("\"{version}\"").as_str());
        // The op and kernel registrations are static initializers nothing
        // references: without +whole-archive the linker drops them.
        build.link_lib_modifier("+whole-archive");
        build.compile("rustfx_kernels");

        for flag in &lflags {
            if let Some(dir) = flag.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={dir}");
                // Lets the library (and the bridge's unit tests) also load
                // outside Python (C++ tests, serving).
                println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
                // Installed from a wheel, rustfx/ sits beside tensorflow/ in
                // site-packages, wherever the user's TF is.
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
}
