#!/usr/bin/env bash
# Runs the test suite, in one of two tiers; the last line says which ran and how it ended.
#
#   scripts/test.sh          everything: the unit tests and the two test binaries, tests/fast/ and
#                            tests/live/ (live tests against a real server, the browser's and
#                            the manifests'; what .ci/run runs), then scripts/check-docs.py with
#                            the binary they built. Installs what they need first (below).
#   scripts/test.sh --fast   the edit-test loop: the unit tests (--lib) and the one binary of
#                            tests/fast/ (pipeline, cli, bad_input, profile_fuzz, module_graph,
#                            console). No server
#                            is installed or started: MONGO_STRESS_SKIP_LIVE=1 skips bad_input's
#                            one live test (reported at the end), and MONGO_STRESS_SERVER_BIN
#                            points nowhere, so a run that would start one fails instead. Nothing
#                            is installed or downloaded beyond the crates cargo fetches.
#
# Further arguments go to cargo test, e.g. `scripts/test.sh --fast -- --nocapture`. One file's
# tests of tests/live/ by their module: `cargo test --release --test live scale::`. The live tests
# run two at a time in one process; those that measure time, memory or CPU run alone
# (tests/common/mod.rs, `alone()`).
#
# The full tier installs the server first if it is missing (idempotent; see
# scripts/install-server.sh).
# MONGO_STRESS_TEST_URI=mongodb://... runs the live tests against that server instead;
# MONGO_STRESS_SKIP_LIVE=1 skips them (they fail, never skip, without one of the two). A skipped
# test still says "ok" (libtest has no runtime skip): it leaves a marker in target/tmp/skipped-tests/,
# and the last lines here count and name the tests that did not run.
# MONGO_STRESS_HDRHISTOGRAM_JAR=path names HdrHistogram's jar when it is not Debian's;
# MONGO_STRESS_BROWSER=path names the headless Chromium, MONGO_STRESS_SKIP_BROWSER=1 skips it.
# MONGO_STRESS_SKIP_K8S_VALIDATE=1 skips the offline checks of deploy/kubernetes (tests/live/manifests.rs),
# which otherwise need the Python kubernetes-validate package (installed below).
# MONGO_STRESS_NODE_EXPORTER=path names Prometheus's node_exporter for tests/live/server_metrics.rs
# when it is not Debian's prometheus-node-exporter (installed below);
# MONGO_STRESS_SKIP_NODE_EXPORTER=1 skips that one test.
# MONGO_STRESS_PROMETHEUS=path names Prometheus for tests/live/metrics.rs when it is not on PATH
# (Debian's prometheus is installed below); MONGO_STRESS_SKIP_PROMETHEUS=1 skips the tests that
# need it.
# MONGO_STRESS_SECANTUSD_PY=path names the Python server secantusd-py (PyPI's SecantusDB) for
# tests/live/audit.rs when it is not on PATH (installed below into a virtual environment);
# MONGO_STRESS_SKIP_SECANTUSD_PY=1 skips the tests that need it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
start=$SECONDS
skips="${CARGO_TARGET_DIR:-target}/tmp/skipped-tests"
tests_log="${CARGO_TARGET_DIR:-target}/tmp/cargo-test.log"
mkdir -p "$(dirname "$tests_log")"
: >"$tests_log"
rm -rf "$skips"

# Prints which tier ran, how it ended and what did not run, then exits with cargo's status.
finish() {
  local rc=$1 tier=$2 outcome="passed"
  [ "$rc" -eq 0 ] || outcome="FAILED (exit $rc)"
  # A failing test's own words (its panic), again at the very end, where an excerpt of the
  # output (CI's tail) still shows them.
  if [ "$rc" -ne 0 ] && [ -s "$tests_log" ]; then
    echo
    echo "== why the failing tests failed (cargo test's failures sections, again):"
    awk '/^failures:$/{on=1} on{print} /^test result:/{on=0}' "$tests_log" | grep -v '^test result:' | head -n 80
  fi
  echo
  echo "== tier: $tier: $outcome in $((SECONDS - start)) s (build included)"
  if [ -d "$skips" ] && [ -n "$(ls -A "$skips")" ]; then
    echo "== SKIPPED: $(ls -A "$skips" | wc -l) of the tests reported ok without running:"
    for f in "$skips"/*; do
      echo "   $(basename "$f") ($(cat "$f")=1)"
    done
  fi
  exit "$rc"
}

if [ "${1:-}" = "--fast" ]; then
  shift
  rc=0
  env -u MONGODB_URI -u MONGO_STRESS_TEST_URI MONGO_STRESS_SKIP_LIVE=1 \
    MONGO_STRESS_SERVER_BIN=/nonexistent/no-server-in-the-fast-tier \
    cargo test --lib --test fast "$@" 2>&1 | tee "$tests_log" || rc=$?
  finish "$rc" "fast (unit, pipeline, cli, bad_input, profile_fuzz, module_graph, console; no server; \
scripts/test.sh runs the live, manifests and browser tests too)"
fi

if [ -z "${MONGO_STRESS_TEST_URI:-}" ] && [ "${MONGO_STRESS_SKIP_LIVE:-}" != "1" ]; then
  scripts/install-server.sh
fi
# The other readers of latency.hlog in tests/live/intervals.rs: the Python hdrhistogram package
# and HdrHistogram's Java log processor (Debian's libhdrhistogram-java; java must be on PATH).
python3 -c "import hdrh" 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check hdrhistogram
# The client of tests/live/capture.rs's workload (a driver that is not mongo-stress): pymongo.
python3 -c "import pymongo" 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check pymongo
# The Kubernetes API schemas of tests/live/manifests.rs (strict validation, offline): kubernetes-validate.
if [ "${MONGO_STRESS_SKIP_K8S_VALIDATE:-}" != "1" ]; then
  python3 -c "import kubernetes_validate" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check kubernetes-validate
fi
if [ -z "${MONGO_STRESS_HDRHISTOGRAM_JAR:-}" ] && [ ! -f /usr/share/java/hdrhistogram.jar ]; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libhdrhistogram-java default-jre-headless >/dev/null
fi
# The certificates of tests/live/coordinated_tls.rs: Debian's openssl command.
if ! command -v openssl >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends openssl >/dev/null
fi
# The exporter of tests/live/server_metrics.rs: Debian's prometheus-node-exporter (the test starts
# its own on a free loopback port; the package's service, if any, is left alone).
if [ -z "${MONGO_STRESS_NODE_EXPORTER:-}" ] && [ "${MONGO_STRESS_SKIP_NODE_EXPORTER:-}" != "1" ] &&
  ! command -v prometheus-node-exporter >/dev/null && ! command -v node_exporter >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus-node-exporter >/dev/null
fi
# The Prometheus of tests/live/metrics.rs (it scrapes the tool and receives its remote writes):
# Debian's prometheus; the test starts its own on a free loopback port (the package's service, if
# any, is left alone).
if [ -z "${MONGO_STRESS_PROMETHEUS:-}" ] && [ "${MONGO_STRESS_SKIP_PROMETHEUS:-}" != "1" ] &&
  ! command -v prometheus >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
# The browser of tests/live/browser_report.rs: Debian's headless Chromium.
if [ -z "${MONGO_STRESS_BROWSER:-}" ] && [ "${MONGO_STRESS_SKIP_BROWSER:-}" != "1" ] &&
  ! command -v chromium-headless-shell >/dev/null && ! command -v chromium >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium-headless-shell >/dev/null
fi
# The Python server of tests/live/audit.rs (it honours j: true, which secantusd-rs accepts and
# ignores): PyPI's SecantusDB, in a virtual environment of its own.
if [ -z "${MONGO_STRESS_SECANTUSD_PY:-}" ] && [ "${MONGO_STRESS_SKIP_SECANTUSD_PY:-}" != "1" ] &&
  ! command -v secantusd-py >/dev/null; then
  venv="${XDG_DATA_HOME:-$HOME/.local/share}/mongo-stress/secantusd-py"
  if [ ! -x "$venv/bin/secantusd-py" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --pre SecantusDB
  fi
  export MONGO_STRESS_SECANTUSD_PY="$venv/bin/secantusd-py"
fi
# The reference implementation of tests/live/history.rs (E-Divisive means with Hunter's t-test):
# Apache Otava 0.8.0 from PyPI, with the numpy and scipy it names, in a virtual environment of its
# own (its other dependencies serve its databases and Slack, which the test does not use).
if [ "${MONGO_STRESS_SKIP_OTAVA:-}" != "1" ] && [ -z "${MONGO_STRESS_OTAVA_PYTHON:-}" ]; then
  venv="${XDG_DATA_HOME:-$HOME/.local/share}/mongo-stress/otava"
  if ! "$venv/bin/python" -c "import otava.analysis" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps apache-otava==0.8.0
    "$venv/bin/pip" install --quiet --disable-pip-version-check "numpy==2.2.0" "scipy>=1.16,<1.17"
  fi
  export MONGO_STRESS_OTAVA_PYTHON="$venv/bin/python"
fi
# The optimized binary, for the one live test that compares the tool's timing with another
# program's (tests/live/change_streams.rs: a listener's lag against a pymongo watcher's); a
# debug build's own slowness is milliseconds an event.
if [ "${MONGO_STRESS_SKIP_LIVE:-}" != "1" ] && [ -z "${MONGO_STRESS_OPTIMIZED_BIN:-}" ]; then
  cargo build --release --bin mongo-stress
  target="${CARGO_TARGET_DIR:-target}"
  case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
  export MONGO_STRESS_OPTIMIZED_BIN="$target/release/mongo-stress"
fi
rc=0
cargo test --all-targets "$@" 2>&1 | tee "$tests_log" || rc=$?
# Every command output quoted in README.md and docs/*.md, reproduced (its shape) by the binary
# cargo test just built (scripts/check-docs.py; its docstring has the marker convention). It
# starts embedded servers, so it goes with the live tests.
bin="${CARGO_TARGET_DIR:-target}/debug/mongo-stress"
for a in "$@"; do [ "$a" = "--release" ] && bin="${CARGO_TARGET_DIR:-target}/release/mongo-stress"; done
docs_rc=0
if [ "${MONGO_STRESS_SKIP_LIVE:-}" = "1" ] || [ -n "${MONGO_STRESS_TEST_URI:-}" ]; then
  mkdir -p "$skips"
  if [ -n "${MONGO_STRESS_TEST_URI:-}" ]; then why=MONGO_STRESS_TEST_URI; else why=MONGO_STRESS_SKIP_LIVE; fi
  echo "$why" >"$skips/scripts::check-docs"
else
  echo
  python3 scripts/check-docs.py "$bin" || docs_rc=$?
fi
[ "$rc" -ne 0 ] || rc=$docs_rc
# genny's workloads (../shared/reference/genny): what `validate` says of each, as docs/genny.md's
# table says it (fails, rather than passes empty, when the copy is missing).
genny_rc=0
python3 scripts/genny-corpus.py --bin "$bin" --check --validate-only || genny_rc=$?
[ "$rc" -ne 0 ] || rc=$genny_rc
finish "$rc" "full (every test, the docs' quoted outputs, genny's corpus)"
