#!/usr/bin/env bash
# Build the device kit into CHECKOUT/.carry (ignored by git; carried by the device call).
# Needs a Debian 12 (bookworm) machine with apt and pip that can reach PyPI and Debian.
#   bash examples/tinyinfer/qualified/kit/make_kit.sh
# .carry/whl        relgate's run-time closure (pinned by requirements.lock) + fabric, as
#                   py3.12 manylinux x86_64 wheels (the device's python3 is 3.12)
# .carry/debs       openssh-server/-client, every library they link but glibc, nss_wrapper, git
# .carry/glibc-deb  Debian's libc6 2.36, used on the device only if its glibc is older
# No keys: device_sshd.sh and qualify_over_ssh.py generate them fresh on every run.
set -euo pipefail
CHECKOUT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
OUTDIR=${RELGATE_KIT_DIR:-$CHECKOUT/.carry}
git -C "$CHECKOUT" check-ignore -q "$OUTDIR" || { echo "make_kit: $OUTDIR is not ignored by git" >&2; exit 2; }
rm -rf "$OUTDIR"/whl "$OUTDIR"/debs "$OUTDIR"/glibc-deb
mkdir -p "$OUTDIR"/whl "$OUTDIR"/debs "$OUTDIR"/glibc-deb

platforms=()
for n in 2_17 2_24 2_27 2_28 2_31 2_34; do platforms+=(--platform "manylinux_${n}_x86_64"); done
constraints=$(mktemp); trap 'rm -f "$constraints"' EXIT
grep -vE '^(#|pytest|iniconfig|pluggy)' "$CHECKOUT/requirements.lock" > "$constraints"
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 "${platforms[@]}" -c "$constraints" -d "$OUTDIR/whl" \
  nox gitpython build twine packaging fabric

apt-get update -qq
(cd "$OUTDIR/debs" && apt-get download -qq openssh-server openssh-client openssh-sftp-server \
  libaudit1 libcap-ng0 libcap2 libcom-err2 libcrypt1 libssl3 libgcrypt20 libgpg-error0 \
  libgssapi-krb5-2 libk5crypto3 libkeyutils1 libkrb5-3 libkrb5support0 liblz4-1 liblzma5 libnsl2 \
  libpam0g libpcre2-8-0 libselinux1 libsystemd0 libtirpc3 libwrap0 zlib1g libzstd1 libnss-wrapper git)
(cd "$OUTDIR/glibc-deb" && apt-get download -qq libc6)

echo "make_kit: $(ls "$OUTDIR"/whl | wc -l) wheels, $(ls "$OUTDIR"/debs | wc -l) .debs;" \
     "$(du -sh --apparent-size "$OUTDIR" | cut -f1) in $OUTDIR (the device call carries at most 64 MiB)"
