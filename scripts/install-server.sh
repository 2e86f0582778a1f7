#!/usr/bin/env bash
# Installs the embedded test server, SecantusDB's secantusd-rs (crate secantus-mdb), idempotently.
# It needs cmake (for WiredTiger) and --ignore-rust-version (the crate asks for a newer rustc than
# it really needs). A real mongod on PATH makes this unnecessary: the embedded default prefers it.
set -euo pipefail

VERSION="0.5.3-beta.196"

if command -v mongod >/dev/null 2>&1; then
  echo "install-server: mongod found at $(command -v mongod); secantusd-rs is still installed for the tests"
fi

if ! command -v cmake >/dev/null 2>&1; then
  echo "install-server: installing cmake"
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq cmake >/dev/null
fi

bin="${CARGO_HOME:-$HOME/.cargo}/bin/secantusd-rs"
if [ -x "$bin" ] && cargo install --list | grep -q "^secantus-mdb v${VERSION}:"; then
  echo "install-server: secantusd-rs ${VERSION} already installed at $bin"
  exit 0
fi

echo "install-server: building secantus-mdb ${VERSION} (about 5 minutes on 2 cores)"
cargo install secantus-mdb --version "${VERSION}" --locked --ignore-rust-version
echo "install-server: installed $bin"
