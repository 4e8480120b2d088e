#!/usr/bin/env bash
# Serving throughput: starts build/bin/tinfer-server on a free loopback port and drives it with
# build/bin/tinfer-loadgen at 1, 8, 32 and 64 concurrent streams (each client sends 2 streamed
# requests of 64 tokens, ignore_eos so every request is the same length). Prints a markdown
# table (aggregate generated tok/s, time to first token p50 / p99, per-stream decode tok/s) and
# writes the loadgen JSON of each point under <build>/bench-server/.
#   bash scripts/bench-server.sh [MODEL_DIR] [--backend cpu|cuda|auto] [--streams "1 8 32 64"]
#                                [--random-weights] (a directory with config.json + tokenizer.json
#                                                    is enough: speed without the weights)
#                                [--update-readme]   (the table between examples/server/README.md's
#                                                     server-table markers)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TINFER_BUILD_DIR:-build}
model=$build/models/smollm2-135m-instruct
backend=auto
streams="1 8 32 64"
update=0
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --update-readme) update=1; shift ;;
    --random-weights) extra+=(--random-weights); shift ;;
    --backend) backend=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    *) model=$1; shift ;;
  esac
done
max=0
for c in $streams; do [ "$c" -gt "$max" ] && max=$c; done
out=$build/bench-server
mkdir -p "$out"
log=$out/server.log
"$build/bin/tinfer-server" -m "$model" --port 0 --parallel "$max" --ctx 256 --queue 256 \
  --backend "$backend" --quiet "${extra[@]}" 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
port=""
for _ in $(seq 600); do
  port=$(grep -o 'listening on http://[^:]*:[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done
[ -n "$port" ] || { echo "bench-server: the server did not start:" >&2; cat "$log" >&2; exit 1; }
url=http://127.0.0.1:$port
desc=$(grep -o "ready: .*" "$log" | head -1 | sed 's/^ready: //')
"$build/bin/tinfer-loadgen" --url "$url" -c 1 -n 1 --max-tokens 8 >/dev/null # warm-up
table=$out/table.md
{
echo "$desc; $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo
echo "| streams | requests | aggregate tok/s | TTFT p50 (ms) | TTFT p99 (ms) | per-stream tok/s p50 |"
echo "|---|---|---|---|---|---|"
for c in $streams; do
  "$build/bin/tinfer-loadgen" --url "$url" -c "$c" -n 2 --max-tokens 64 --ignore-eos \
    --json "$out/streams-$c.json" >/dev/null
  python3 - "$out/streams-$c.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print("| %d | %d | %.1f | %.1f | %.1f | %.1f |" % (j["clients"], j["requests"], j["aggregate_tok_s"],
      j["ttft_ms_p50"], j["ttft_ms_p99"], j["stream_tok_s_p50"]))
PY
done
} > "$table"
cat "$table"
if [ "$update" = 1 ]; then
  python3 - "$table" <<'PY'
import re, sys
p = "examples/server/README.md"
doc = open(p).read()
new = "<!-- server-table:begin -->\n" + open(sys.argv[1]).read().strip() + "\n<!-- server-table:end -->"
doc, n = re.subn(r"<!-- server-table:begin -->.*?<!-- server-table:end -->", new, doc, flags=re.S)
if n != 1:
    sys.exit("bench-server: no server-table markers in " + p)
open(p, "w").write(doc)
PY
fi
kill -TERM $pid
wait $pid
trap - EXIT
