#!/usr/bin/env bash
# A local Harbor (the framework Terminal-Bench 2 runs in) on a machine that reaches package
# registries but no image registry: Debian's docker.io with its daemon started here, the
# Compose v2 and buildx plugins as .deb files of the next Debian release (they install on
# this one), a task base image built with debootstrap and `docker import`, and Harbor in a
# Python 3.12 virtual environment made from pyenv's 3.12.
#
#   ci/interop/harbor/setup.sh          idempotent; several minutes the first time (as root)
#   ci/interop/harbor/setup.sh env      prints the exports that put this Harbor on PATH:
#                                       eval "$(ci/interop/harbor/setup.sh env)"
#   ci/interop/harbor/setup.sh venv     only the Python environment (what the trajectory
#                                       validator needs: no Docker, no root)
#
# Everything goes under $HARBOR_LOCAL_DIR (default $TMPDIR/agent-harbor-local, outside the
# repository: cargo would walk the debootstrap tree), shared by every checkout.
# Tasks must start FROM harbor-local/debian:bookworm and keep the verifier in the same
# environment (a separate verifier image would be pulled). pip over HTTPS inside containers
# fails: bring wheels or binaries in from the host. Used by ci/interop/harbor/trial.sh and by
# the ACP trial; a lock keeps two concurrent set-ups from interleaving.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
W=${HARBOR_LOCAL_DIR:-${TMPDIR:-/tmp}/agent-harbor-local}
mkdir -p "$W"
W=$(cd "$W" && pwd)
HARBOR_VERSION=${HARBOR_VERSION:-0.26.0}
mode=${1:-setup}
case "$mode" in
env)
  # LiteLLM (inside Harbor) otherwise fetches its cost map from the internet at import.
  echo "export PATH=$W/venv/bin:\$PATH LITELLM_LOCAL_MODEL_COST_MAP=True"; exit 0 ;;
setup|venv) ;;
*) echo "usage: $0 [setup|env|venv]" >&2; exit 2 ;;
esac
exec 9>"$W/.lock"
flock 9
log() { printf 'harbor-setup: %s\n' "$*" >&2; }
venv() {
  if [ ! -x "$W/venv/bin/harbor" ] || [ "$("$W/venv/bin/pip" show harbor 2>/dev/null | sed -n 's/^Version: //p')" != "$HARBOR_VERSION" ]; then
    py=$(ls -d "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.12*/bin/python3.12 2>/dev/null | head -1)
    [ -n "$py" ] || py=$(command -v python3.12 || true)
    [ -n "$py" ] || { log "no Python 3.12 found (pyenv or PATH)"; exit 1; }
    log "installing harbor==$HARBOR_VERSION into $W/venv ($py)"
    "$py" -m venv "$W/venv"
    "$W/venv/bin/pip" install -q "harbor==$HARBOR_VERSION"
  fi
}
if [ "$mode" = venv ]; then venv; exit 0; fi
export DEBIAN_FRONTEND=noninteractive
mirror() {
  local m
  m=$(sed -n 's/^URIs: *\(.*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  [ -n "$m" ] || m=$(awk '/^deb / && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  [ -n "$m" ] || { log "no Debian mirror found in the apt sources"; exit 1; }
  echo "$m"
}
if ! command -v dockerd >/dev/null || ! docker compose version >/dev/null 2>&1 \
  || ! docker buildx version >/dev/null 2>&1 || ! command -v debootstrap >/dev/null; then
  log "installing docker.io, debootstrap, and the next release's compose and buildx plugins"
  apt-get update -qq
  m=$(mirror)
  mkdir -p "$W/apt/lists/partial" "$W/apt/debs"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $m trixie main" >"$W/apt/next.list"
  A=(-o "Dir::Etc::sourcelist=$W/apt/next.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$W/apt/lists")
  apt-get "${A[@]}" update -qq
  (cd "$W/apt/debs" && apt-get "${A[@]}" download docker-compose docker-buildx)
  apt-get install -y -qq --no-install-recommends docker.io debootstrap \
    "$W"/apt/debs/docker-compose_*.deb "$W"/apt/debs/docker-buildx_*.deb
fi
if ! docker info >/dev/null 2>&1; then
  log "starting dockerd (log: $W/dockerd.log)"
  # Without the lock descriptor: the daemon outlives this script.
  nohup dockerd >"$W/dockerd.log" 2>&1 9>&- &
  echo $! >"$W/dockerd.pid"
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { log "dockerd did not come up; see $W/dockerd.log"; exit 1; }
fi
if ! docker image inspect harbor-local/debian:bookworm >/dev/null 2>&1; then
  log "building harbor-local/debian:bookworm with debootstrap"
  [ -x "$W/rootfs/bin/sh" ] || debootstrap --variant=minbase bookworm "$W/rootfs" "$(mirror)"
  rm -rf "$W"/rootfs/var/cache/apt/archives/*.deb "$W"/rootfs/var/lib/apt/lists/*
  tar -C "$W/rootfs" -c . | docker import -c 'CMD ["bash"]' \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - harbor-local/debian:bookworm
  rm -rf "$W/rootfs"
fi
venv
docker compose version
"$W/venv/bin/harbor" --version 2>/dev/null || "$W/venv/bin/pip" show harbor | sed -n 's/^Version: /harbor /p'
docker images harbor-local/debian
