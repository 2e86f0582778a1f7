#!/usr/bin/env bash
# The coordinated-omission demonstration of docs/latency.md: the same one-second server freeze
# (SIGSTOP, then SIGCONT) in the middle of an open-loop run at 200/s and of a closed-loop run,
# both inserts with 20 users for 6 s against one local secantusd-rs. Prints the latency lines.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cargo build --release --quiet
BIN=target/release/mongo-stress
SERVER="${MONGO_STRESS_SERVER_BIN:-$(command -v secantusd-rs)}"
work=$(mktemp -d)
trap 'kill -CONT "$server_pid" 2>/dev/null; kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT
"$SERVER" --host 127.0.0.1 --port 0 --storage-path "$work/data" --log-level WARNING >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/server.log" && break; sleep 0.1; done
uri="mongodb://$(grep -o "listening on [0-9.:]*" "$work/server.log" | awk '{print $3}')/?directConnection=true"
cat > "$work/p.toml" <<'TOML'
[target]
database = "freeze_demo"
[setup]
drop = true
[document]
city = { choice = ["Guangzhou", "Shenzhen", "Dongguan", "Foshan"] }
state = "GD"
[[group]]
name = "ins"
op = "insert"
threads = 20
duration = "6s"
TOML
for model in "open loop, --rate 200|--rate 200" "closed loop|"; do
  label=${model%%|*}; extra=${model#*|}
  # shellcheck disable=SC2086
  "$BIN" run "$work/p.toml" --uri "$uri" --quiet --out "$work/$label" $extra >/dev/null &
  run=$!
  sleep 2.5; kill -STOP "$server_pid"; sleep 1; kill -CONT "$server_pid"
  wait "$run" || true
  echo "== $label, server frozen for 1 s at 2.5 s"
  python3 - "$work/$label/summary.json" <<'PY'
import json, sys
r = [r for r in json.load(open(sys.argv[1]))["runs"][0]["rows"] if r["label"] == "ins"][0]
print(f'{"":10}{"samples":>9}{"ops/s":>9}{"average":>9}{"median":>9}{"p95":>9}{"p99":>9}{"max":>9}  (ms)')
print(f'{"latency":10}{r["samples"]:>9}{r["throughput"]:>9.1f}{r["average_ms"]:>9.2f}{r["median_ms"]:>9.2f}{r["p95_ms"]:>9.2f}{r["p99_ms"]:>9.2f}{r["max_ms"]:>9.2f}')
print(f'{"service":10}{"":>9}{"":>9}{r["service_average_ms"]:>9.2f}{r["service_median_ms"]:>9.2f}{"":>9}{r["service_p99_ms"]:>9.2f}{r["service_max_ms"]:>9.2f}')
print(f'late {r["late"]}, max behind schedule {r["max_behind_ms"]:.0f} ms, missed {r["missed"]}')
PY
done
