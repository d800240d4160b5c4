#!/usr/bin/env bash
# The serving certificate's validity period (issue 17 item 5; docs/serve.md "TLS"), run by ctest
# from the repository root:
#   bash tests/cli/certs.sh path/to/tally
# Certificates with chosen notBefore/notAfter come from `openssl ca -selfsign -startdate -enddate`:
#   - an expired pair, or one not valid yet, is refused at start (exit 1, the date and the field named);
#   - a pair with a day left starts, is warned about (tls-certificate-expiring) and
#     tally_tls_certificate_expiry_seconds says how long it has;
#   - a rotation to an expired pair keeps the previous pair (tls-reload-failed, the handshake still
#     shows the old certificate), and a rotation to a good pair is taken.
set -u
TALLY=$(realpath "${1:?usage: certs.sh path/to/tally}")
source tests/cli/lib/harness.sh certs.sh curl openssl

mkdir "$tmp/ca"
touch "$tmp/ca/index.txt"
echo 01 >"$tmp/ca/serial"
cat >"$tmp/ca.cnf" <<EOF
[ca]
default_ca = d
[d]
dir = $tmp/ca
database = $tmp/ca/index.txt
serial = $tmp/ca/serial
new_certs_dir = $tmp/ca
default_md = sha256
policy = p
copy_extensions = copy
unique_subject = no
[p]
commonName = supplied
EOF
# cert NAME START END: a self-signed P-256 pair for 127.0.0.1 valid from START to END
# (YYYYMMDDHHMMSSZ) in $tmp/NAME.{crt,key}.
cert() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=tally-$1" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/$1.key" -out "$tmp/$1.csr" 2>/dev/null &&
    openssl ca -batch -config "$tmp/ca.cnf" -selfsign -keyfile "$tmp/$1.key" -in "$tmp/$1.csr" \
      -out "$tmp/$1.crt" -startdate "$2" -enddate "$3" >"$tmp/$1.ca.log" 2>&1 ||
    { echo "certs.sh: openssl could not make the $1 certificate"; cat "$tmp/$1.ca.log"; exit 1; }
}
utc() { date -u -d "$1" +%Y%m%d%H%M%SZ; }
cert expired 20200101000000Z 20200102000000Z
cert future "$(utc '+30 days')" "$(utc '+60 days')"
cert short "$(utc '-1 hour')" "$(utc '+1 day')"
cert good "$(utc '-1 hour')" "$(utc '+90 days')"

# Refused at start, with the date and the field.
for c in expired future; do
  timeout 10 "$TALLY" serve --listen 127.0.0.1:0 --tls-cert "$tmp/$c.crt" --tls-key "$tmp/$c.key" \
    --state examples/cluster >"$tmp/$c.out" 2>&1
  echo "rc=$?" >>"$tmp/$c.out"
done
grep -q 'rc=1' "$tmp/expired.out" && grep -q 'expired at 2020-01-02T00:00:00Z (notAfter)' "$tmp/expired.out" && ok \
  || bad "an expired pair must be refused at start: $(cat "$tmp/expired.out")"
grep -q 'rc=1' "$tmp/future.out" && grep -q 'is not valid before .*(notBefore)' "$tmp/future.out" && ok \
  || bad "a pair not valid yet must be refused at start: $(cat "$tmp/future.out")"

# A day left: it starts, warns, and the gauge says so.
cp "$tmp/short.crt" "$tmp/tls.crt"
cp "$tmp/short.key" "$tmp/tls.key"
"$TALLY" serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" \
  --state examples/cluster 2>"$tmp/serve.log" &
pids+=($!)
PORT=
for _ in $(seq 100); do
  PORT=$(sed -n 's/.*event=listening .*port=\([0-9]*\).*/\1/p' "$tmp/serve.log" | head -1)
  [ -n "$PORT" ] && break
  sleep 0.1
done
if [ -z "$PORT" ]; then
  bad "serve did not start: $(cat "$tmp/serve.log")"
  echo "certs.sh: $pass passed, $fail failed"
  exit 1
fi
for _ in $(seq 30); do grep -q 'event=tls-certificate-expiring' "$tmp/serve.log" && break; sleep 0.1; done
grep 'event=tls-certificate-expiring' "$tmp/serve.log" | grep -q 'expires at .*renew it' && ok \
  || bad "a pair with a day left should be warned about: $(cat "$tmp/serve.log")"
# gauge: tally_tls_certificate_expiry_seconds from /metrics.
gauge() {
  curl -s --max-time 5 -k "https://127.0.0.1:$PORT/metrics" |
    sed -n 's/^tally_tls_certificate_expiry_seconds \(-\{0,1\}[0-9]*\)$/\1/p'
}
left=$(gauge)
[ -n "$left" ] && [ "$left" -gt 86000 ] && [ "$left" -le 86400 ] && ok \
  || bad "tally_tls_certificate_expiry_seconds should be about a day: '$left'"

# subject: the CN of the certificate the server presents now.
subject() {
  openssl s_client -connect "127.0.0.1:$PORT" -servername 127.0.0.1 </dev/null 2>/dev/null |
    openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//'
}
# A rotation to an expired pair: refused, the previous pair stays.
cat "$tmp/expired.key" >"$tmp/tls.key"
cat "$tmp/expired.crt" >"$tmp/tls.crt"
for _ in $(seq 40); do grep -q 'event=tls-reload-failed.*expired at' "$tmp/serve.log" && break; sleep 0.1; done
grep 'event=tls-reload-failed' "$tmp/serve.log" | grep -q 'expired at 2020-01-02T00:00:00Z' && ok \
  || bad "a rotation to an expired pair should fail with the date: $(grep tls-reload "$tmp/serve.log")"
[ "$(subject)" = tally-short ] && ok || bad "the previous pair should stay after a bad rotation: '$(subject)'"
# A rotation to a good pair is taken.
cat "$tmp/good.key" >"$tmp/tls.key"
cat "$tmp/good.crt" >"$tmp/tls.crt"
for _ in $(seq 40); do [ "$(subject)" = tally-good ] && break; sleep 0.1; done
[ "$(subject)" = tally-good ] && ok || bad "a rotation to a good pair should be taken: '$(subject)'"
left=$(gauge)
[ -n "$left" ] && [ "$left" -gt $((89 * 86400)) ] && ok || bad "the gauge should follow the new pair: '$left'"

echo "certs.sh: $pass passed, $fail failed"
[ $fail -eq 0 ]
