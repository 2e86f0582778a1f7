#!/usr/bin/env bash
# Runs the whole test suite: unit tests, binary tests, and live tests against a real server.
# Installs the server first if it is missing (idempotent; see scripts/install-server.sh).
# MONGO_STRESS_TEST_URI=mongodb://... runs the live tests against that server instead;
# MONGO_STRESS_SKIP_LIVE=1 skips them (they fail, never skip, without one of the two).
# MONGO_STRESS_HDRHISTOGRAM_JAR=path names HdrHistogram's jar when it is not Debian's;
# MONGO_STRESS_BROWSER=path names the headless Chromium, MONGO_STRESS_SKIP_BROWSER=1 skips it.
# MONGO_STRESS_SKIP_K8S_VALIDATE=1 skips the offline checks of deploy/kubernetes (tests/manifests.rs),
# which otherwise need the Python kubernetes-validate package (installed below).
# MONGO_STRESS_NODE_EXPORTER=path names Prometheus's node_exporter for tests/live_server_metrics.rs
# when it is not Debian's prometheus-node-exporter (installed below);
# MONGO_STRESS_SKIP_NODE_EXPORTER=1 skips that one test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${MONGO_STRESS_TEST_URI:-}" ] && [ "${MONGO_STRESS_SKIP_LIVE:-}" != "1" ]; then
  scripts/install-server.sh
fi
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
# The other readers of latency.hlog in tests/live_intervals.rs: the Python hdrhistogram package
# and HdrHistogram's Java log processor (Debian's libhdrhistogram-java; java must be on PATH).
python3 -c "import hdrh" 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check hdrhistogram
# The Kubernetes API schemas of tests/manifests.rs (strict validation, offline): kubernetes-validate.
if [ "${MONGO_STRESS_SKIP_K8S_VALIDATE:-}" != "1" ]; then
  python3 -c "import kubernetes_validate" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check kubernetes-validate
fi
if [ -z "${MONGO_STRESS_HDRHISTOGRAM_JAR:-}" ] && [ ! -f /usr/share/java/hdrhistogram.jar ]; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libhdrhistogram-java default-jre-headless >/dev/null
fi
# The exporter of tests/live_server_metrics.rs: Debian's prometheus-node-exporter (the test starts
# its own on a free loopback port; the package's service, if any, is left alone).
if [ -z "${MONGO_STRESS_NODE_EXPORTER:-}" ] && [ "${MONGO_STRESS_SKIP_NODE_EXPORTER:-}" != "1" ] &&
  ! command -v prometheus-node-exporter >/dev/null && ! command -v node_exporter >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus-node-exporter >/dev/null
fi
# The browser of tests/browser_report.rs: Debian's headless Chromium.
if [ -z "${MONGO_STRESS_BROWSER:-}" ] && [ "${MONGO_STRESS_SKIP_BROWSER:-}" != "1" ] &&
  ! command -v chromium-headless-shell >/dev/null && ! command -v chromium >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium-headless-shell >/dev/null
fi
cargo test --all-targets "$@"
