#!/usr/bin/env bash
# Prepare a machine with no sshd, no fabric and no network (the device) for
# qualify_over_ssh.py: relgate's dependencies from the kit's wheels, and OpenSSH unpacked
# from the kit's Debian packages into a prefix of its own under $RUN (never into /).
#   bash examples/tinyinfer/qualified/kit/device_sshd.sh [KIT]   # KIT: default CHECKOUT/.carry
#   . /tmp/relgate-kit/env.sh     # PATH, PYTHONPATH and RELGATE_SSHD for the run
# It starts no server and makes no keys: qualify_over_ssh.py does both, fresh, per run.
# Knobs: RELGATE_KIT_RUN (/tmp/relgate-kit), RELGATE_SITE (/tmp/site), PY (python3);
# RELGATE_KIT_FORCE_LOADER=1, RELGATE_KIT_FORCE_NSS_WRAPPER=1 take the device's other paths here.
# Exit 0 only when sshd -t accepts a config with the prefix's sshd, and python imports
# fabric, paramiko, nox and git.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
KIT=${1:-$(cd "$HERE/../../../.." && pwd)/.carry}
RUN=${RELGATE_KIT_RUN:-/tmp/relgate-kit}
SITE=${RELGATE_SITE:-/tmp/site}
PY=${PY:-python3}
R=$RUN/root
LIBS=$R/lib/x86_64-linux-gnu:$R/usr/lib/x86_64-linux-gnu
log() { echo "[device_sshd] $*"; }
die() { log "FAIL: $*"; exit 1; }
unpack() { if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$1" "$2"; else "$PY" "$HERE/deb_x.py" "$1" "$2"; fi; }

log "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}"), $(getconf GNU_LIBC_VERSION), $("$PY" -V) at $(command -v "$PY")"
for t in git nvidia-smi nvcc sshd ssh; do log "on PATH: $t -> $(command -v $t || echo MISSING)"; done
[ -d "$KIT/whl" ] && [ -d "$KIT/debs" ] || die "$KIT has no whl/ and debs/: run make_kit.sh and carry .carry"

# 1. wheels (one pip call: --target --upgrade replaces whole folders); RELGATE_KIT_NO_WHEELS=1
#    where python already has them (a rehearsal of the prefix on a workstation)
if [ "${RELGATE_KIT_NO_WHEELS:-0}" != 1 ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$KIT"/whl/*.whl
  log "$(ls "$KIT"/whl/*.whl | wc -l) wheels in $SITE"
fi

# 2. the OpenSSH prefix; Debian 12's binaries need glibc >= 2.36, else they run under its own loader
rm -rf "$RUN"; mkdir -p "$R" "$RUN/bin"; chmod 700 "$RUN"
for deb in "$KIT"/debs/*.deb; do unpack "$deb" "$R"; done
LOADER=""; SSHD_FLAGS=""
if [ "$(printf '%s\n2.36\n' "$(getconf GNU_LIBC_VERSION | cut -d' ' -f2)" | sort -V | head -1)" != 2.36 ] ||
   [ "${RELGATE_KIT_FORCE_LOADER:-0}" = 1 ]; then
  mkdir -p "$RUN/glibc"; unpack "$KIT"/glibc-deb/libc6_*.deb "$RUN/glibc"
  LOADER="$RUN/glibc/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --library-path $RUN/glibc/lib/x86_64-linux-gnu:$LIBS"
  SSHD_FLAGS="-r"   # no re-exec through the system's loader
  log "glibc older than 2.36 (or forced): ssh and sshd run under the kit's loader"
fi
if [ -n "$LOADER" ]; then libs=$($LOADER --list "$R/usr/sbin/sshd" 2>&1); else libs=$(LD_LIBRARY_PATH=$LIBS ldd "$R/usr/sbin/sshd" 2>&1); fi
missing=$(echo "$libs" | grep 'not found' || true)
[ -z "$missing" ] || die "sshd still lacks: $missing"

# 3. privilege separation: an 'sshd' user (nss_wrapper gives sshd one where the machine has
#    none, without touching /etc) and /run/sshd; a locked root ('!') would refuse key logins
PRELOAD=""
locked=$(getent shadow root 2>/dev/null | cut -d: -f2 | cut -c1 || true)
if ! getent passwd sshd >/dev/null || [ "$locked" = "!" ] || [ "${RELGATE_KIT_FORCE_NSS_WRAPPER:-0}" = 1 ]; then
  { getent passwd | grep -v '^sshd:'; echo "sshd:x:64999:65534:sshd privsep:/run/sshd:/bin/false"; } > "$RUN/passwd"
  { getent group; getent group 65534 >/dev/null || echo "nogroup:x:65534:"; } > "$RUN/group"
  PRELOAD="LD_PRELOAD=$R/usr/lib/x86_64-linux-gnu/libnss_wrapper.so NSS_WRAPPER_PASSWD=$RUN/passwd NSS_WRAPPER_GROUP=$RUN/group"
  if [ "$locked" = "!" ]; then
    (umask 077; getent shadow | sed 's/^root:[^:]*:/root:*:/' > "$RUN/shadow")
    PRELOAD="$PRELOAD NSS_WRAPPER_SHADOW=$RUN/shadow"
  fi
  log "privsep user and root's login from nss_wrapper ($RUN/passwd)"
fi
mkdir -p -m 0755 /run/sshd

# 4. wrappers on PATH: sshd, ssh, ssh-keygen, and git where the machine has none
wrap() { printf '#!/bin/sh\nexec env LD_LIBRARY_PATH=%s %s %s %s "$@"\n' "$LIBS" "$2" "${LOADER}" "$R$1" > "$RUN/bin/$3"; chmod 755 "$RUN/bin/$3"; }
wrap /usr/sbin/sshd "$PRELOAD" sshd
sed -i "s|\"\$@\"|$SSHD_FLAGS \"\$@\"|" "$RUN/bin/sshd"
wrap /usr/bin/ssh "" ssh
wrap /usr/bin/ssh-keygen "" ssh-keygen
if ! command -v git >/dev/null; then
  printf '#!/bin/sh\nGIT_EXEC_PATH=%s GIT_TEMPLATE_DIR=%s LD_LIBRARY_PATH=%s exec %s "$@"\n' \
    "$R/usr/lib/git-core" "$R/usr/share/git-core/templates" "$LIBS" "$R/usr/bin/git" > "$RUN/bin/git"
  chmod 755 "$RUN/bin/git"; log "git: the kit's, $("$RUN/bin/git" --version)"
fi
cat > "$RUN/env.sh" <<ENV
export PATH=$RUN/bin:$SITE/bin:\$PATH
export PYTHONPATH=$SITE\${PYTHONPATH:+:\$PYTHONPATH}
export RELGATE_SSHD=$RUN/bin/sshd
ENV

# 5. checks: the config sshd will get parses, python has what relgate needs
mkdir -p "$RUN/check"
"$RUN/bin/ssh-keygen" -q -t ed25519 -N '' -f "$RUN/check/host_key"
printf 'ListenAddress 127.0.0.1:2\nHostKey %s\nUsePAM no\nSubsystem sftp internal-sftp\n' "$RUN/check/host_key" > "$RUN/check/sshd_config"
"$RUN/bin/sshd" -t -f "$RUN/check/sshd_config" || die "sshd -t refused a minimal config"
rm -rf "$RUN/check"
PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} "$PY" -c 'import fabric, paramiko, nox, git; print("[device_sshd] python imports fabric", fabric.__version__, "paramiko", paramiko.__version__)'
log "ready: . $RUN/env.sh  ($("$RUN/bin/ssh" -V 2>&1))"
