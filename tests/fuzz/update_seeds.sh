#!/usr/bin/env bash
# Minimises the fuzz corpora into the committed seeds.
#
#   tests/fuzz/update_seeds.sh [TARGET...]
#
# For each target (default: every target), libFuzzer's `-merge=1` keeps the
# smallest inputs of seeds/<target>/ and corpus/<target>/ (what run.sh
# accumulated) that together reach every feature any of them reaches, and
# they replace seeds/<target>/. run.sh copies seeds/<target>/ into the
# corpus before each run, so the next campaign starts where this one ended.
#
# Inputs run.sh copies from the repository anyway (the PE corpus,
# tests/golden/pe, as the `pe` seeds and, behind the mode byte 0x01, the
# `authenticode` ones) are left out, and so are inputs over MAX_SEED_BYTES
# (default 65536): the seeds stay small. Prints each target's count and size.
set -euo pipefail

FUZZ_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$FUZZ_DIR/../.." && pwd)
cd "$ROOT"
export RUSTC_BOOTSTRAP=1
SANITIZER=${FUZZ_SANITIZER:-address}
MAX_SEED_BYTES=${MAX_SEED_BYTES:-65536}

if [ $# -gt 0 ]; then
    TARGETS=("$@")
else
    mapfile -t TARGETS < <(cargo fuzz list --fuzz-dir "$FUZZ_DIR")
fi

# The hashes of the inputs run.sh makes from files in the repository.
repo_inputs=$(mktemp)
trap 'rm -f "$repo_inputs"' EXIT
find "$ROOT/tests/golden/pe" -type f | while read -r f; do
    sha1sum <"$f" | cut -d' ' -f1
    { printf '\x01'; cat "$f"; } | sha1sum | cut -d' ' -f1
done >"$repo_inputs"

for t in "${TARGETS[@]}"; do
    seeds=$FUZZ_DIR/seeds/$t
    corpus=$FUZZ_DIR/corpus/$t
    mkdir -p "$seeds" "$corpus" "$FUZZ_DIR/logs"
    merged=$(mktemp -d)
    # The first directory receives the merge; the others are read.
    cargo fuzz run --fuzz-dir "$FUZZ_DIR" --sanitizer "$SANITIZER" "$t" \
        "$merged" "$seeds" "$corpus" -- \
        -merge=1 -rss_limit_mb=2048 -timeout=10 \
        >"$FUZZ_DIR/logs/$t.merge.log" 2>&1
    for f in "$merged"/*; do
        [ -e "$f" ] || continue
        if [ "$(stat -c %s "$f")" -gt "$MAX_SEED_BYTES" ] ||
            grep -qx "$(sha1sum <"$f" | cut -d' ' -f1)" "$repo_inputs"; then
            rm -f "$f"
        fi
    done
    rm -rf "$seeds"
    mv "$merged" "$seeds"
    chmod 755 "$seeds"
    printf '%-18s %5d inputs %8s\n' "$t" "$(find "$seeds" -type f | wc -l)" \
        "$(du -sh "$seeds" | cut -f1)"
done
