#!/usr/bin/env bash
# Training throughput of the 'long' presets: 1 process vs 2 DDP processes (torchrun, gloo on CPU), fp32 vs bf16
# autocast, one thread per process, each for SECONDS of training on the full corpus. Run it on a quiet machine:
#   bash bench/train_speed.sh [SECONDS]        -> one JSON line per configuration (AMPS="off" skips bf16)
set -uo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-60}"
PY="${PYTHON:-python}"
TMP="$(mktemp -d)"
for kind in bert elmo; do
  for amp in ${AMPS:-off bf16}; do
    for n in 1 2; do
      out="$TMP/$kind-$amp-$n"
      if [ "$n" = 1 ]; then
        OMP_NUM_THREADS=1 "$PY" -m ctxlib train "$kind" --preset long --amp "$amp" --no-timeline --stretch "$SECS" --out "$out" >"$out.log" 2>&1
      else
        OMP_NUM_THREADS=1 "$PY" -m torch.distributed.run --standalone --nproc-per-node=2 -m ctxlib train "$kind" \
          --preset long --amp "$amp" --no-timeline --stretch "$SECS" --out "$out" >"$out.log" 2>&1
      fi
      "$PY" - "$out" "$kind" "$amp" "$n" <<'PY'
import json, sys
d, kind, amp, n = sys.argv[1:]
try:
    s = json.load(open(d + "/config.json"))["summary"]
    print(json.dumps({"model": kind, "amp": amp, "processes": int(n), "steps": s["steps"], "tokens": s["tokens_seen"],
                      "seconds": s["this_stretch_s"], "tokens_per_s": s["tokens_per_s"], "bf16_used": s.get("bf16")}))
except (OSError, KeyError, ValueError) as e:
    print(json.dumps({"model": kind, "amp": amp, "processes": int(n), "error": str(e)}))
PY
    done
  done
done
rm -rf "$TMP"
