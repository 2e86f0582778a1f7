#!/usr/bin/env bash
# Size and speed of report.html for a one-hour run of 10 groups at 1 s intervals: builds the
# release binary, makes a real short run of 10 groups on the embedded server, stretches its
# interval log and resources.tsv to one hour (each series' real lines repeated with shifted
# times), then times `mongo-stress report` and Chromium's rendering. See docs/performance.md.
# Usage: scripts/bench-report.sh [BROWSER]   (default: chromium-headless-shell)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cargo build --release --quiet --bin mongo-stress
exec python3 scripts/bench-report.py "${1:-chromium-headless-shell}"
