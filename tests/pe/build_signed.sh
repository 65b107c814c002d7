#!/usr/bin/env bash
# Regenerates the Authenticode-signed test PEs in tests/golden/pe/signed/.
#
#   tests/pe/build_signed.sh
#
# Needs openssl, osslsigncode (2.x, for its built-in test TSA: no network) and a
# Python with asn1crypto (the thrember venv, for the hand-made variants that
# osslsigncode cannot produce). The keys and certificates live in pki/ and are
# only generated when missing, so a rebuild with the committed pki/ gives the
# same signatures (RSA PKCS#1 v1.5 is deterministic; every time is fixed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$ROOT/tests/golden/pe/signed
PKI=$OUT/pki
PY=${PYTHON:-/tmp/thrember-venv/bin/python}
SITE=${PE_SOURCES:-/work/main/.venv/lib/python3.11/site-packages}
T32=$SITE/pip/_vendor/distlib/t32.exe
T64=$SITE/pip/_vendor/distlib/t64.exe
CLI64=$SITE/setuptools/cli-64.exe
SIGN_TIME=1700000000 # 2023-11-14T22:13:20Z
TSA_TIME=1700000100

mkdir -p "$PKI"
cd "$PKI"

# --- PKI: root CA -> intermediate -> leaf, a self-signed leaf, a TSA ---------
cnf() { # $1: extensions section body
    printf '[req]\ndistinguished_name=dn\n[dn]\n[ext]\n%b\n' "$1"
}
if [ ! -f leaf.key ]; then
    for k in root inter leaf self tsa; do
        openssl genrsa -out $k.key 2048 2>/dev/null
    done
    cnf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign' >ca.cnf
    cnf 'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=codeSigning' >leaf.cnf
    cnf 'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=critical,timeStamping' >tsa.cnf
    openssl req -new -x509 -key root.key -subj "/C=US/O=rustfx test/CN=rustfx Root CA" \
        -days 7300 -set_serial 1 -config ca.cnf -extensions ext -out root.pem
    openssl req -new -key inter.key -subj "/C=US/O=rustfx test/CN=rustfx Intermediate CA" \
        -config ca.cnf -out inter.csr
    openssl x509 -req -in inter.csr -CA root.pem -CAkey root.key -set_serial 2 -days 7000 \
        -extfile ca.cnf -extensions ext -out inter.pem
    openssl req -new -key leaf.key -subj "/C=US/O=rustfx test/CN=rustfx Code Signing" \
        -config leaf.cnf -out leaf.csr
    openssl x509 -req -in leaf.csr -CA inter.pem -CAkey inter.key -set_serial 3 -days 6000 \
        -extfile leaf.cnf -extensions ext -out leaf.pem
    openssl req -new -x509 -key self.key -subj "/CN=rustfx Self Signed" -days 6000 \
        -set_serial 4 -config leaf.cnf -extensions ext -out self.pem
    openssl req -new -key tsa.key -subj "/C=US/O=rustfx test/CN=rustfx TSA" \
        -config tsa.cnf -out tsa.csr
    openssl x509 -req -in tsa.csr -CA root.pem -CAkey root.key -set_serial 5 -days 6000 \
        -extfile tsa.cnf -extensions ext -out tsa.pem
    rm -f ./*.csr ./*.cnf
fi
cat leaf.pem inter.pem root.pem >chain.pem
cat tsa.pem root.pem >tsa-chain.pem

cd "$OUT"
# sign IN OUT CERTS KEY [osslsigncode options...]
sign() {
    local in=$1 out=$2 certs=$3 key=$4
    shift 4
    rm -f "$out"
    osslsigncode sign -certs "$PKI/$certs" -key "$PKI/$key" -time $SIGN_TIME "$@" \
        -in "$in" -out "$out" >/dev/null
}
TSA=(-TSA-certs "$PKI/tsa-chain.pem" -TSA-key "$PKI/tsa.key" -TSA-time $TSA_TIME)

# --- osslsigncode's own signatures -----------------------------------------
sign "$CLI64" cli64_chain.exe chain.pem leaf.key -n "rustfx test program"
sign "$CLI64" cli64_chain_noname.exe chain.pem leaf.key
sign "$CLI64" cli64_chain_ts.exe chain.pem leaf.key -n "rustfx" "${TSA[@]}"
sign "$CLI64" cli64_self.exe self.pem self.key -n "self"
sign "$CLI64" cli64_self_ts.exe self.pem self.key "${TSA[@]}"
# Self-signed cert first in the list, so it is not the "last" one thrember skips.
cat "$PKI/self.pem" "$PKI/leaf.pem" >"$PKI/self-then-leaf.pem"
sign "$CLI64" cli64_self_first.exe self-then-leaf.pem leaf.key -n "x"
sign "$CLI64" cli64_sha1.exe chain.pem leaf.key -h sha1 -n "sha1"
sign cli64_chain_ts.exe cli64_nested.exe self.pem self.key -nest -h sha1 "${TSA[@]}"
sign cli64_nested.exe cli64_nested2.exe chain.pem leaf.key -nest -h sha512 -n "third"
sign "$T32" t32_ts.exe chain.pem leaf.key -n "t32" "${TSA[@]}"
sign "$T64" t64_nested.exe chain.pem leaf.key -n "t64" "${TSA[@]}"
sign t64_nested.exe t64_nested.tmp.exe self.pem self.key -nest "${TSA[@]}"
mv t64_nested.tmp.exe t64_nested.exe

# --- hand-made variants: PKCS#9 countersignatures, odd times, corruptions ---
"$PY" "$ROOT/tests/golden/build_authenticode_variants.py" "$OUT" "$PKI"
rm -f "$PKI/chain.pem" "$PKI/tsa-chain.pem" "$PKI/self-then-leaf.pem"
ls -l "$OUT"
