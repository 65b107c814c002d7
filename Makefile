# One entry point. `make demo` and `make test` each do their own setup:
# a venv with tensorflow-cpu, the op library built against it, then the job.
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
LIB    := python/rustfx/_rustfx_ops.so
CORE_LIB := python/rustfx_core/_rustfx_core.so
# How the cargo commands that compile against TF find it: the venv's Python
# (build.rs and crates/rustfx-predict/build.rs ask it for TF's headers).
TF_ENV := PYTHON="$(CURDIR)/$(VPY)"

.PHONY: toolchain-aarch64 features-aarch64 sensor-aarch64 test-aarch64 test-aarch64-core aarch64-builds aarch64-cell wheel-aarch64
.PHONY: test-matrix matrix all setup build demo test disk-room test-rust test-python lint bench bench-arrow bench-pipeline bench-records bench-corpus bench-malconv2 bench-sensor bench-stall bench-scale bench-cache bench-cache-first-epoch soak serving-lib serving-host fuzz clean predict test-predict sensor test-sensor pe-corpus wheel chromium

all: build

setup: $(VENV)/.installed

$(VENV)/.installed: python/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -r python/requirements.txt
	# Make `import rustfx` work in the venv without installing a copy.
	echo "$(CURDIR)/python" > "$$($(VPY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/rustfx.pth"
	touch $@

# One cargo build, each artifact once (the workspace's crates, Cargo.toml):
# the op library (calls TF only through its C API, BUILD_NOTES.md, so it
# loads into TF 2.16-2.21), the core's C ABI (crates/rustfx-capi, no TF
# linked: python/rustfx_core and the Ray corpus workers) and rustfx-features
# (the pure-Rust program the tests compare with the ops).
# Installed by rename, not copied over: a process that has the old
# library loaded (a notebook, a test run) keeps its mapping instead of
# crashing (SIGBUS) on a file rewritten under it.
build: setup
	$(TF_ENV) cargo build --release -p rustfx-ops -p rustfx-capi -p rustfx-features
	cp target/release/librustfx_ops.so $(LIB).new && mv -f $(LIB).new $(LIB)
	cp target/release/librustfx_capi.so $(CORE_LIB).new && mv -f $(CORE_LIB).new $(CORE_LIB)

# What a TF Serving build links (BUILD_NOTES.md, "TF Serving"): the kernels,
# the bridge, the cxx runtime and the Rust core in one static library, and a
# small C++ host linked against it and TF's C++ libraries from the pip wheel.
TF_DIR = $$($(VPY) -c 'import os, tensorflow as tf; print(os.path.dirname(tf.__file__))' 2>/dev/null)
SERVING_LIB := target/release/librustfx_ops.a
SERVING_HOST := target/release/serving_host

serving-lib: setup
	$(TF_ENV) cargo rustc --release -p rustfx-ops --lib --crate-type staticlib

serving-host: serving-lib
	tf=$(TF_DIR) && cflags=$$(TF_CPP_MIN_LOG_LEVEL=3 $(VPY) -c 'import tensorflow as tf; print(" ".join(tf.sysconfig.get_compile_flags()))') && \
	$(CXX) -O2 -Wno-deprecated-declarations $$cflags tests/cpp/serving_host.cc -o $(SERVING_HOST) \
	  -Wl,--whole-archive $(SERVING_LIB) -Wl,--no-whole-archive \
	  -Wl,--no-as-needed -L$$tf -l:libtensorflow_cc.so.2 -l:libtensorflow_framework.so.2 \
	  -Wl,-rpath,$$tf -lpthread -ldl -lm

# rustfx-predict (docs/serving.md): serves a SavedModel through
# TF's C API, declared by bindgen from the wheel's headers at build time.
# bindgen loads libclang: $$LIBCLANG_PATH if set, else the `libclang` wheel
# that requirements.txt puts in the venv (no root, no system package).
PREDICT_ENV = LIBCLANG_PATH="$${LIBCLANG_PATH:-$$($(VPY) -c 'import clang, os; print(os.path.join(os.path.dirname(clang.__file__), "native"))')}" \
	$(TF_ENV)

predict: setup
	$(PREDICT_ENV) cargo build --release -p rustfx-predict

test-predict: predict
	$(PREDICT_ENV) cargo test --release -p rustfx-predict

# rustfx-sensor (docs/sensor.md): a model exported by rustfx.sensor.export,
# run in pure Rust (the core's FX, then tract on model.onnx); no TF, no C++.
# Cargo profile `sensor` (Cargo.toml, BUILD_NOTES.md): target/sensor/.
# `make sensor` builds the program only; test-sensor builds its tests.
sensor:
	cargo build --profile sensor -p rustfx-sensor --bin rustfx-sensor

test-sensor: sensor
	cargo test --profile sensor -p rustfx-sensor

# The PE test corpus (tests/pe/README.md): installs the mingw-w64 cross
# compilers if missing (Debian, needs root) and checks that the scripts
# rebuild the committed files byte for byte (`make test` runs the same
# check, skipping the MinGW part where the compilers are missing).
pe-corpus:
	command -v x86_64-w64-mingw32-gcc >/dev/null && command -v i686-w64-mingw32-gcc >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq gcc-mingw-w64-x86-64 gcc-mingw-w64-i686; }
	python3 tests/pe/build_corpus.py --check
	python3 tests/pe/build_directory_cases.py --check
	python3 tests/pe/build_resource_cases.py --check

# Headless Chromium, for the test that renders the HTML explain report
# (tests/python/test_explain_model.py): installed if missing (Debian, needs
# root), as pe-corpus installs MinGW; where it cannot be, that test skips.
chromium:
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq chromium; } || \
	  echo "chromium not installed: the HTML report's rendering test will skip"

demo: build
	$(VPY) python/demo/train_language_classifier.py

# The core, the C ABI and rustfx-features (the default members), then the
# op library's own tests (its threads; they link TF, found by the rpath).
test-rust: setup
	cargo test --release
	$(TF_ENV) cargo test --release -p rustfx-ops

# The Python tests in PYTEST_WORKERS processes (pytest-xdist), each test
# file's in one of them (--dist loadfile: a module's fixtures, a Ray
# cluster or a TF worker process, are made once); the tests' own `make`
# runs take turns (tests/python/make_lock.py). Not --dist loadgroup:
# pytest-xdist 3.8 marks its groups in item._nodeid, which pytest 9 ignores.
PYTEST_WORKERS ?= 2
PYTEST := $(VPY) -m pytest tests/python -q -n $(PYTEST_WORKERS) --dist loadfile
test-python: build predict sensor wheel chromium
	$(PYTEST)

# Every test: the Rust tests, the Python tests, three cells of the matrix on
# the wheel test-python built, and the aarch64 cell (test-aarch64). pytest
# runs in 2 processes (PYTEST): alone it used half a core on average, most
# of its time waiting for servers, Ray clusters, pip and fresh processes
# (22m26s serially, 10m55s with -n 2 --dist loadfile, about 10 minutes of
# CPU either way, on a loaded machine; docs/matrix.md, "Its time").
# Beside it, under `nice -n 19`: the matrix's venvs and their TF
# (run_matrix.py --setup-only, mostly downloads; target/matrix/setup.log),
# so that `make matrix` after pytest installs only the wheel; and the
# aarch64 cell's builds (aarch64-builds: its two Pythons beside two
# cross-compiles, about 14 minutes on 2 cores), which get what the tests
# leave. The tests' output stays in front; the builds' log is
# target/aarch64/builds.log.
# The cell installs its toolchain (apt) and registers qemu with binfmt_misc:
# without root it is skipped, saying so (AARCH64_CELL=no skips it too).
# `make`, not $(MAKE), in the long line: `make -n test` (tests/python/
# test_readme.py) runs every line that names $(MAKE), and this one would
# run the tests.
AARCH64_CELL ?= $(if $(filter 0,$(shell id -u)),yes,no)
# A full run writes about 17 GB (measured: target/ 11 GB, .venv 3.2 GB, the
# wheel test's venv and Ray's logs under /tmp); a disk that fills midway
# fails tests far from the cause (a CI run: "No space left on device" in
# pip and cargo at once), so a short disk is said first.
TEST_DISK_GB ?= 20
disk-room:
	@for d in . $${TMPDIR:-/tmp}; do 	  free=$$(df -Pk "$$d" | awk 'NR==2 {print int($$4 / 1048576)}'); 	  [ "$$free" -ge $(TEST_DISK_GB) ] || echo "make test: WARNING: $$free GB free under $$d;" 	    "a full run writes about 17 GB (TEST_DISK_GB=$(TEST_DISK_GB))"; done
test: disk-room test-rust test-predict test-sensor build predict sensor wheel chromium
	@mkdir -p target/aarch64 target/matrix
	builds=; if [ "$(AARCH64_CELL)" = yes ]; then \
	  nice -n 19 make --no-print-directory aarch64-builds > target/aarch64/builds.log 2>&1 & \
	  builds=$$!; else echo "make test: the aarch64 cell is skipped (it needs root)"; fi; \
	  nice -n 19 $(VPY) tests/matrix/run_matrix.py --setup-only --cells $(MATRIX_CELLS) \
	    > target/matrix/setup.log 2>&1 & setup=$$!; \
	  $(PYTEST); tests=$$?; wait $$setup; \
	  [ $$tests -eq 0 ] && make --no-print-directory matrix; tests=$$?; built=0; \
	  [ -z "$$builds" ] || { wait $$builds; built=$$?; }; \
	  [ $$built -eq 0 ] || { tail -n 60 target/aarch64/builds.log; echo "aarch64 builds failed"; }; \
	  [ $$tests -eq 0 ] && [ $$built -eq 0 ]
	[ "$(AARCH64_CELL)" != yes ] || $(MAKE) --no-print-directory aarch64-cell

lint:
	cargo fmt --all --check
	cargo clippy --all-targets -- -D warnings
	$(TF_ENV) cargo clippy --release -p rustfx-ops --all-targets -- -D warnings
	$(PREDICT_ENV) cargo clippy --release -p rustfx-predict --all-targets -- -D warnings
	cargo clippy --release -p rustfx-sensor --all-targets -- -D warnings

# Benchmarks, not part of `make test` (docs/performance.md).
bench: build
	$(VPY) benches/bench_ops.py
	$(VPY) benches/extractors.py
	cargo bench --bench core

bench-pipeline: build
	$(VPY) benches/pipeline.py

# Short records (lines, URLs, domain names): rustfx against TF's ops and
# scikit-learn, the core alone, the non-UTF-8 cliff, a TextLineDataset
# pipeline (docs/performance.md, "Short records").
bench-records: build
	$(VPY) benches/records.py

# Ray against a local tf.data pipeline, and EMBER2024 against thrember
# (docs/corpus.md); THREMBER_PYTHON: a Python that imports thrember.
bench-corpus: build
	$(VPY) benches/corpus.py

# Arrow in and out of the core against the TF op (docs/performance.md, "Arrow").
bench-arrow: build
	$(VPY) benches/arrow.py

# The one wheel (BUILD_NOTES.md, "Wheels"): py3-none-manylinux2014_x86_64,
# for TF 2.16-2.21 x CPython 3.10-3.13. zig (python/tools/zig, the venv's
# `ziglang`) compiles the C++ and links both libraries and rustfx-features
# for glibc 2.17, with libc++ inside; only the target's artifacts (explicit
# --target) link with it, not build scripts. auditwheel checks the symbols
# and sets the tag; TF's library stays out of the wheel. Replaces only an
# earlier x86-64 wheel in dist/.
# $(call build_wheel,TRIPLE,ZIG_PREFIX,PLAT,CARGO_TARGET_DIR,ENV,RUSTFLAGS):
# the recipe both wheels share (ZIG_PREFIX: "" or "aarch64-", the name of
# python/tools/zig's wrappers; ENV, RUSTFLAGS: what the target adds).
ZIG_TOOLS := $(CURDIR)/python/tools/zig
comma := ,
define build_wheel
	ZIG="$(CURDIR)/$(VPY) -m ziglang" \
	CC_$(subst -,_,$(1))=$(ZIG_TOOLS)/$(2)zigcc CXX_$(subst -,_,$(1))=$(ZIG_TOOLS)/$(2)zigc++ \
	CARGO_BUILD_TARGET=$(1) RUSTFLAGS="-C linker=$(ZIG_TOOLS)/$(2)zigcc$(6)" \
	CARGO_TARGET_DIR="$(CURDIR)/$(4)" $(5) \
	  $(VPY) -m pip wheel --no-build-isolation --no-deps -q . -w dist/raw
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m auditwheel repair \
	  --exclude libtensorflow_framework.so.2 --plat $(3) -w dist dist/raw/rustfx-*.whl
	rm -rf dist/raw build
endef
wheel: setup
	rm -rf dist/raw build dist/rustfx-*_x86_64.whl
	$(call build_wheel,x86_64-unknown-linux-gnu,,manylinux2014_x86_64,target/wheel)

# The same wheel for aarch64 Linux (BUILD_NOTES.md, "The aarch64 wheel"),
# cross-built here: Debian's rustc and its aarch64 std (as features-aarch64),
# zig for aarch64 glibc 2.17, TF's C API headers from the venv's (x86-64) TF
# (the same text on every CPU), and the op library linked against a stub of
# libtensorflow_framework.so.2 made from the names that TF exports
# (python/tools/zig/tf-link-stub); auditwheel checks it from this x86-64
# host (--plat auto: its --plat names only this host's CPU; the `ls` then
# checks that it chose manylinux2014, glibc 2.17). The stub is not on the
# rpath: the library's only rpath is $ORIGIN/../tensorflow, as in the
# x86-64 wheel. Replaces only an earlier aarch64 wheel in dist/.
WHEEL_AARCH64_DIR := target/aarch64/wheel
TF_PY = TF_CPP_MIN_LOG_LEVEL=3 $(VPY) -c 'import tensorflow as tf, sys; print(eval(sys.argv[1]))'
wheel-aarch64: toolchain-aarch64 setup
	rm -rf dist/raw build dist/rustfx-*_aarch64.whl
	ZIG="$(CURDIR)/$(VPY) -m ziglang" python/tools/zig/tf-link-stub \
	  "$$($(TF_PY) 'tf.sysconfig.get_lib()')/libtensorflow_framework.so.2" \
	  $(WHEEL_AARCH64_DIR)/tf-stub $(ZIG_TOOLS)/aarch64-zigcc
	$(call build_wheel,$(AARCH64),aarch64-,auto,$(WHEEL_AARCH64_DIR),\
	  RUSTC=/usr/bin/rustc _PYTHON_HOST_PLATFORM=linux-aarch64 \
	  TF_CFLAGS="-I$$($(TF_PY) 'tf.sysconfig.get_include()')" \
	  TF_VERSION="$$($(TF_PY) 'tf.__version__')" \
	  TF_LFLAGS='-l:libtensorflow_framework.so.2 -Wl$(comma)-rpath$(comma)$$ORIGIN/../tensorflow',\
	  -L native=$(CURDIR)/$(WHEEL_AARCH64_DIR)/tf-stub)
	ls dist/rustfx-*-py3-none-manylinux2014_aarch64.*.whl

# The tested matrix (tests/matrix/run_matrix.py, docs/matrix.md): the wheel
# on TF 2.16-2.21 x CPython 3.10-3.13, a venv per cell in
# target/matrix/venvs (made once, then reused). MATRIX_CELLS=all for every
# cell; the default is CI's: the oldest TF on the oldest Python, TF 2.18 (a
# user's tensorflow-cpu==2.18 kept), the newest TF on the newest Python.
MATRIX_CELLS ?= 2.16:3.10,2.18:3.12,2.21:3.13
test-matrix: wheel matrix
matrix:
	$(VPY) tests/matrix/run_matrix.py --wheel dist/rustfx-*_x86_64.whl --cells $(MATRIX_CELLS) \
	  --table target/matrix/table.md

# Peak RSS of MalConv2's input for 32 real files: int32 rows of max_len
# against int16 ragged rows padded to the batch's longest (docs/api.md).
bench-malconv2: build
	$(VPY) benches/malconv2_memory.py

# A simulated trainer's stall, local and cached, on CPU 0 (docs/stalls.md).
bench-stall: build
	taskset -c 0 $(VPY) benches/stall.py

# rustfx.offload's launchers on a Ray cluster of this machine (ray's
# cluster_utils), each worker held to a share of CPU 1 by a cgroup v1 quota
# (root): fixed worker counts against autoscaled (docs/scale.md, "At scale").
bench-scale: build
	$(VPY) benches/scale.py $(if $(SCALE_PE_DIR),--pe-dir $(SCALE_PE_DIR))

# What the feature cache's keys cost (docs/feature_cache.md):
# in Rust, EMBER2024 vectors of tests/golden/pe extracted, cached by
# content, cached by stat, and the floors (read and hash; stat),
# FEATURE_CACHE_FILES=DIR for other files; then the same through TF, where
# users run it: rustfx.files(cache=) in a parallel tf.data map against
# extraction, the floor and tf.data's cache() (benches/cache_tf.py,
# CACHE_PE_DIR=DIR for PE files of at least 500 kB).
bench-cache: build
	cargo bench -p rustfx-cache --bench feature_cache
	$(VPY) benches/cache_tf.py $(if $(CACHE_PE_DIR),--pe-dir $(CACHE_PE_DIR))

# A cache's first epoch against no cache at the defaults users run, in
# alternated pairs, each pair printed and the median ratio
# (docs/feature_cache.md, "The first epoch"): the content key at the op's
# default threads, with RUSTFX_NUM_THREADS=1, and the stat key
# (benches/cache_first_epoch.py; CACHE_PE_DIR=DIR for PE files of at
# least 500 kB, FIRST_EPOCH_PAIRS=N pairs per setting).
FIRST_EPOCH_PAIRS ?= 6
bench-cache-first-epoch: build
	$(VPY) benches/cache_first_epoch.py --pairs $(FIRST_EPOCH_PAIRS) $(if $(CACHE_PE_DIR),--pe-dir $(CACHE_PE_DIR))

# A soak, not a test (docs/safety.md, "Soak"): the feature cache for
# SOAK_MINUTES (2 processes x AUTOTUNE map threads on one capped cache, one
# killed with -9 every minute, each epoch's rows against uncached
# extraction), then 50 offload epochs (a dispatcher with a --work-dir and a
# rustfx-worker, the worker killed every 5 epochs, the dispatcher once).
# Samples and a summary in target/soak; SOAK_ARGS="--cache" (or
# "--offload") for one part.
SOAK_MINUTES ?= 30
soak: build
	$(VPY) benches/soak.py --minutes $(SOAK_MINUTES) $(SOAK_ARGS)

# rustfx-sensor against rustfx-predict and Keras: footprint and speed (docs/sensor.md).
bench-sensor: build predict sensor
	$(VPY) benches/sensor.py

# aarch64 (BUILD_NOTES.md, "aarch64"), cross-built on this x86-64 machine:
# Debian's rustc (rustc-web) with its aarch64 std, zig as C compiler and
# linker for glibc 2.17 (python/tools/zig/aarch64-zigcc), in target/aarch64. The
# toolchain and qemu-user are installed if missing (Debian, needs root).
AARCH64 := aarch64-unknown-linux-gnu
AARCH64_BIN := target/aarch64/$(AARCH64)
AARCH64_ENV := RUSTC=/usr/bin/rustc CARGO_TARGET_DIR="$(CURDIR)/target/aarch64" \
	ZIG="$(CURDIR)/$(VPY) -m ziglang" \
	CC_aarch64_unknown_linux_gnu="$(ZIG_TOOLS)/aarch64-zigcc" \
	CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER="$(ZIG_TOOLS)/aarch64-zigcc"

toolchain-aarch64:
	tests/aarch64/toolchain.sh

features-aarch64: toolchain-aarch64 setup
	$(AARCH64_ENV) cargo build --release --target $(AARCH64) -p rustfx-features

sensor-aarch64: toolchain-aarch64 setup
	$(AARCH64_ENV) cargo build --profile sensor --target $(AARCH64) -p rustfx-sensor --bin rustfx-sensor

# The aarch64 cell of `make test` (docs/matrix.md, "aarch64"), under
# qemu-user against the x86-64 builds: (1) tests/aarch64/parity.py, the
# aarch64 wheel's rustfx-features byte for byte on every extractor x layout
# x dtype, and the aarch64 rustfx-sensor on the demo model; (2)
# tests/aarch64/tf_cell.py, the aarch64 wheel in TF 2.20 on an aarch64
# CPython 3.11 (tests/aarch64/arm_python.sh) against the x86-64 wheel in
# TF 2.20: every case's rows and the hashes, a SavedModel saved on x86-64,
# an offload epoch served by the aarch64 worker. aarch64-builds makes what
# it runs (the two Pythons kept in target/aarch64); aarch64-cell runs it,
# making the x86-64 wheel and the demo model if missing.
test-aarch64: aarch64-builds build sensor
	$(MAKE) --no-print-directory aarch64-cell

# The two Pythons (tf_cell.py --prepare: mostly pip's and apt's downloads,
# little CPU) start first and run beside the two cross-compiles, not after
# them; their output follows the builds' (target/aarch64/pythons.log).
# `make`, not $(MAKE), as in `test`: `make -n` does not run this line.
aarch64-builds: toolchain-aarch64 setup
	@mkdir -p target/aarch64
	python3 tests/aarch64/tf_cell.py --prepare > target/aarch64/pythons.log 2>&1 & pythons=$$!; \
	  make --no-print-directory wheel-aarch64 sensor-aarch64; built=$$?; \
	  wait $$pythons; made=$$?; cat target/aarch64/pythons.log; \
	  [ $$made -eq 0 ] || echo "the aarch64 cell's Pythons failed (target/aarch64/pythons.log)"; \
	  [ $$built -eq 0 ] && [ $$made -eq 0 ]

aarch64-cell:
	ls dist/rustfx-*_x86_64.whl >/dev/null 2>&1 || $(MAKE) wheel
	test -f target/demo-sensor/model.onnx || $(MAKE) demo
	python3 tests/aarch64/parity.py --runner qemu-aarch64-static \
	  --x86 target/release/rustfx-features --aarch64 $$(ls dist/rustfx-*_aarch64.whl) \
	  --sensor-x86 target/sensor/rustfx-sensor --sensor-aarch64 $(AARCH64_BIN)/sensor/rustfx-sensor \
	  --model target/demo-sensor --corpus tests/golden --corpus tests/pe --table target/aarch64/parity.md
	python3 tests/aarch64/tf_cell.py --table target/aarch64/tf-parity.md

# The core's tests whose code differs by CPU (SHA-256's block functions, the
# Fingerprint64 batch) and spec_versions (every registry example's output
# bits, NaN payloads included, against the digests x86-64 recorded), built
# for aarch64 and run under qemu; not in `make test` (the test binaries are
# one more aarch64 build of the core).
AARCH64_TEST := $(AARCH64_ENV) CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER=qemu-aarch64-static \
	cargo test --release --target $(AARCH64) -p rustfx
test-aarch64-core: toolchain-aarch64 setup
	$(AARCH64_TEST) --lib -- sha256 hashing
	$(AARCH64_TEST) --test spec_versions

# Coverage-guided fuzzing, every target for FUZZ_SECONDS each (tests/fuzz/README.md).
FUZZ_SECONDS ?= 60
fuzz:
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	tests/fuzz/run.sh $(FUZZ_SECONDS)

# Everything the targets build: target/ (cargo's, the wheel's, the matrix
# venvs, the serving host), the wheel, the copied libraries; not the venv.
clean:
	cargo clean
	rm -rf dist build python/*.egg-info
	rm -f $(LIB) $(CORE_LIB) python/rustfx/_rustfx_core.so
