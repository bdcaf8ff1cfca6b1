#!/usr/bin/env bash
# The models issue's GPU check, for a session that is lent a CUDA machine (the `device` tool):
# BERT and ELMo ('long' presets, the shipped architecture) train for at most 4 minutes each on CUDA,
# then the held-out evals run on what they reached, and the CUDA tokens/s are printed beside
# the CPU's. Nothing under checkpoints/ is touched; results go to $OUT (or out/gpu).
#
#   bash bench/gpu_train.sh            # on the device machine; needs python3 with a CUDA build of torch
#                                      # and the packages of requirements.txt (it says which are missing)
set -uo pipefail
cd "$(dirname "$0")/.."
# the device machine lacks jieba and snownlp: bench/gpu_prepare.sh puts them (and the corpus cache) in .gpu/
if [ -d .gpu/site ]; then export PYTHONPATH="$PWD/.gpu/site" CTXLIB_CACHE="$PWD/.gpu/cache"; fi
OUT="${OUT:-out/gpu}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; fi
"$PY" - <<'PY' || exit 2
import importlib, sys
import torch
print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")
missing = [m for m in ("numpy", "jieba", "snownlp", "tqdm", "sklearn") if importlib.util.find_spec(m) is None]
if missing or not torch.cuda.is_available():
    print("cannot run: " + (f"missing packages {missing}" if missing else "no CUDA device"), file=sys.stderr)
    sys.exit(1)
PY
nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$OUT/gpu.txt"
for kind in bert elmo; do
  # 240 s of training (a budget the lr follows), then the run's own held-out figures; --stretch keeps it resumable
  timeout 330 "$PY" -m ctxlib train "$kind" --preset long --device cuda --time-limit 240 --out "$OUT/$kind" \
    > "$OUT/$kind.log" 2>&1; echo "$kind train rc=$?"
  "$PY" - "$OUT/$kind" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/config.json"))["summary"]
print(sys.argv[1], {k: s.get(k) for k in ("steps", "tokens_seen", "wall_s", "tokens_per_s", "bf16", "device", "valid", "perplexity")})
PY
  "$PY" -m ctxlib eval "$OUT/$kind" --task senses --out "$OUT/$kind-senses.json" > /dev/null 2>&1; echo "$kind senses rc=$?"
done
"$PY" -m ctxlib eval "$OUT/bert" --task cloze --out "$OUT/bert-cloze.json" > /dev/null 2>&1; echo "bert cloze rc=$?"
"$PY" - "$OUT" <<'PY'
import json, sys
o = sys.argv[1]
for k in ("bert", "elmo"):
    try:
        r = json.load(open(f"{o}/{k}-senses.json"))["sets"]
        print(k, {n: (v["best_accuracy"], v["best_pair_ranking"]) for n, v in r.items()})
    except OSError:
        pass
try:
    print("cloze", json.load(open(f"{o}/bert-cloze.json"))["all"])
except OSError:
    pass
PY
