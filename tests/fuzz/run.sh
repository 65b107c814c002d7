#!/usr/bin/env bash
# Runs rustfx's fuzz targets one after another, each for SECONDS.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
#
# SECONDS defaults to 60; TARGETs default to every target (`cargo fuzz list`).
# Each target runs as ONE libFuzzer process (no -jobs/-fork/-workers), so it
# uses one core. Prints, per target, the executions (from libFuzzer's final
# "Done N runs in S second(s)" line), exec/s, the last cov:/ft:/corp: status
# and any crash artifacts; exits 1 if any target crashed (or failed to run).
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`). cargo-fuzz passes
# nightly-only flags (-Zsanitizer=address, sanitizer coverage) to rustc;
# RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them, so no nightly
# toolchain is needed.
#
# Environment:
#   FUZZ_SANITIZER  cargo-fuzz --sanitizer (default: address; "none" is ~2x faster)
#   FUZZ_ARGS       extra libFuzzer flags, e.g. "-max_len=65536"
set -euo pipefail

SECONDS_PER_TARGET=${1:-60}
shift || true
case $SECONDS_PER_TARGET in
    '' | *[!0-9]*) echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac

FUZZ_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$FUZZ_DIR/../.." && pwd)
cd "$ROOT"
export RUSTC_BOOTSTRAP=1
SANITIZER=${FUZZ_SANITIZER:-address}

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is not installed: cargo install cargo-fuzz --locked" >&2
    exit 2
fi

if [ $# -gt 0 ]; then
    TARGETS=("$@")
else
    mapfile -t TARGETS < <(cargo fuzz list --fuzz-dir "$FUZZ_DIR")
fi

echo "== building ${TARGETS[*]} (sanitizer: $SANITIZER)"
for t in "${TARGETS[@]}"; do
    cargo fuzz build --fuzz-dir "$FUZZ_DIR" --sanitizer "$SANITIZER" "$t"
done

# Seed corpora: the committed seeds (seeds/<target>/, the minimised corpus
# of the last long campaign; see docs/safety.md) and a few small real files
# copied at run time. Existing corpus entries are kept, so runs accumulate.
seed() {
    local dir=$FUZZ_DIR/corpus/$1
    mkdir -p "$dir"
    if [ -d "$FUZZ_DIR/seeds/$1" ]; then
        cp -n "$FUZZ_DIR/seeds/$1"/* "$dir"/ 2>/dev/null || true
    fi
    head -c 4096 /bin/ls >"$dir/seed-ls" 2>/dev/null || true
    head -c 4096 "$ROOT/README.md" >"$dir/seed-readme" 2>/dev/null || true
    local py
    py=$(find "$ROOT/python" -name '*.py' -size +1k 2>/dev/null | sort | head -n 1)
    [ -n "$py" ] && head -c 4096 "$py" >"$dir/seed-py"
    printf 'The quick brown fox \xce\xa3\xce\x91\xce\xa3 \xc4\xb0stanbul c:\\ http://x HKEY_ MZ' \
        >"$dir/seed-text"
    if [ "$1" = read_file ]; then
        # 2 bytes max_bytes (LE), 1 selector byte (< 0xf0: fixture path), path.
        local name
        for name in file empty big dir dir/inner fifo fifo_link socket loop_a self \
            dangling zero null proc_status file/x dir_link/inner missing; do
            printf '\x00\x01\x00%s' "$name" >"$dir/seed-$(echo "$name" | tr / _)"
        done
        printf '\x10\x00\xf2' >"$dir/seed-special-proc"
    fi
    if [ "$1" = sensor_features ]; then
        # A valid features.json (as rustfx.sensor.export writes it) behind
        # the length byte, so mutations start from the real layout.
        printf '\x04%s' '{"format": "rustfx-sensor", "format_version": 1, "model_input": "contents",
 "features": [{"layer": "ids", "model_input": "contents", "onnx_input": "ids",
  "spec": {"extractor": "hashed_ngrams", "output_version": 1, "params": {"num_buckets": 64,
   "output": "sequence", "max_tokens": 8, "tokenizer": "word"}}},
  {"layer": "bytes", "model_input": "contents", "onnx_input": "bytes",
   "spec": {"extractor": "byte_histogram"}}],
 "outputs": [{"key": "output_0", "onnx_output": "Identity:0"}]}' >"$dir/seed-features"
    fi
    if [ "$1" = pe ] || [ "$1" = authenticode ]; then
        # The PE corpus (tests/golden/pe), up to 64 KiB per file; for
        # authenticode (signed files only) behind the mode byte 0x01, "the
        # rest is the whole file".
        local f
        if [ "$1" = pe ]; then
            find "$ROOT/tests/golden/pe" -type f -size -64k | while read -r f; do
                cp "$f" "$dir/seed-$(basename "$f")"
            done
        else
            find "$ROOT/tests/golden/pe/signed" -type f -name '*.exe' -size -64k | while read -r f; do
                { printf '\x01'; cat "$f"; } >"$dir/seed-$(basename "$f")"
            done
        fi
    fi
}

status=0
summary=()
mkdir -p "$FUZZ_DIR/logs"
for t in "${TARGETS[@]}"; do
    seed "$t"
    artifacts=$FUZZ_DIR/artifacts/$t
    mkdir -p "$artifacts"
    before=$(ls "$artifacts" | sort)
    log=$FUZZ_DIR/logs/$t.log
    echo "== $t: ${SECONDS_PER_TARGET}s, log in $log"
    rc=0
    # shellcheck disable=SC2086
    cargo fuzz run --fuzz-dir "$FUZZ_DIR" --sanitizer "$SANITIZER" "$t" -- \
        -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 ${FUZZ_ARGS:-} </dev/null >"$log" 2>&1 || rc=$?
    done_line=$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1 || true)
    runs=$(sed -E 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\1/' <<<"$done_line")
    secs=$(sed -E 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\2/' <<<"$done_line")
    last=$(grep -E '(pulse|NEW|REDUCE|DONE|INITED).*cov: ' "$log" | tail -n 1 || true)
    cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | cut -d' ' -f2 || true)
    ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | cut -d' ' -f2 || true)
    corp=$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' <<<"$last" | cut -d' ' -f2 || true)
    new=$(comm -13 <(echo "$before") <(ls "$artifacts" | sort) | grep -v '^$' || true)
    if [ -n "$done_line" ] && [ "${secs:-0}" -gt 0 ]; then
        rate=$((runs / secs))
    else
        rate=?
    fi
    line=$(printf '%-14s runs=%-10s secs=%-6s exec/s=%-7s cov=%-6s ft=%-7s corpus=%-12s' \
        "$t" "${runs:-?}" "${secs:-?}" "$rate" "${cov:-?}" "${ft:-?}" "${corp:-?}")
    if [ "$rc" -ne 0 ] || [ -n "$new" ]; then
        status=1
        line="$line CRASHED (exit $rc)"
        for a in $new; do
            line="$line"$'\n'"    artifact: $artifacts/$a"
        done
        grep -m1 -A3 -E 'panicked at|ERROR: (libFuzzer|AddressSanitizer)' "$log" |
            sed 's/^/    /' >&2 || true
    else
        line="$line ok"
    fi
    echo "$line"
    summary+=("$line")
done

echo
echo "== summary ($(date -u +%Y-%m-%dT%H:%MZ), ${SECONDS_PER_TARGET}s per target)"
printf '%s\n' "${summary[@]}"
exit $status
