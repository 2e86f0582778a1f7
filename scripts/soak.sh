#!/usr/bin/env bash
# A long run stays flat: mongo-stress for DURATION (default 30m) in open loop on the embedded
# server with the sample log off, its RSS, open files and latency.hlog size read every 10 s
# from /proc into soak.tsv; at the end, RSS at minute 5 against the last reading, and the
# interval log's bytes per second in the first and the last third. tests/live/scale.rs has a
# one-minute version of it. See docs/performance.md.
# Usage: scripts/soak.sh [DURATION] [THREADS] [RATE]   (defaults: 30m 1000 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
DURATION=${1:-30m}
THREADS=${2:-1000}
RATE=${3:-1000}
cargo build --release --quiet --bin mongo-stress
work=$(mktemp -d /tmp/mongo-stress-soak-XXXXXX)
target/release/mongo-stress run insert --threads "$THREADS" --rate "$RATE" --duration "$DURATION" \
  --no-samples --quiet --out "$work/run" > "$work/console.txt" 2>&1 &
pid=$!
printf 't_s\trss_kb\topen_files\thlog_bytes\n' > "$work/soak.tsv"
t0=$(date +%s)
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
  hlog=$(stat -c %s "$work/run/latency.hlog" 2>/dev/null || echo 0)
  [ -n "$rss" ] && printf '%s\t%s\t%s\t%s\n' "$(( $(date +%s) - t0 ))" "$rss" "$fds" "$hlog" >> "$work/soak.tsv"
  sleep 10
done
wait "$pid" || { echo "the run failed:"; cat "$work/console.txt"; exit 1; }
python3 - "$work/soak.tsv" <<'EOF'
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]).read().splitlines()[1:]]
at = lambda s: min(rows, key=lambda r: abs(r[0] - s))
five, last = at(300), rows[-1]
third = len(rows) // 3
rate = lambda a, b: (b[3] - a[3]) / max(1, b[0] - a[0])
print(f"{len(rows)} readings over {last[0]} s")
print(f"RSS at {five[0]} s: {five[1] / 1024:.1f} MB; at {last[0]} s: {last[1] / 1024:.1f} MB; "
      f"ratio {last[1] / five[1]:.3f} (target <= 1.10)")
print(f"open files: {min(r[2] for r in rows[third:])} to {max(r[2] for r in rows[third:])} after the first third "
      f"(at most {max(r[2] for r in rows[:third])} in it)")
print(f"latency.hlog: {rate(rows[0], rows[third]):.0f} B/s in the first third, "
      f"{rate(rows[-third], rows[-1]):.0f} B/s in the last; {last[3] / 1e6:.1f} MB in all")
EOF
echo "readings: $work/soak.tsv"
