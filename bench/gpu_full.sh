#!/usr/bin/env bash
# Full-schedule runs at once on one CUDA device (the device tool), each a fixed-seed preset, results (without
# resume.pt, which is too big to come back) as one tgz per model in $OUT. Prepare with bench/gpu_prepare.sh.
# Seen 2026-11-30 on an H200 with bert:long elmo:long gpt:default together: GPT's 20,000 steps took 261 s of
# training (136 k chars/s, bf16) and 550 s with loading and its 16 timeline snapshots; BERT reached step 5,224 of
# 28,000 and ELMo 142 of 20,000 by 560 s: the snapshots are measured on the CPU (Timeline.record), and ELMo's early,
# log-spaced ones dominate. One model per call, or SPECS with --steps-sized presets, fits the 10-minute limit.
#   SPECS="gpt:default" STRETCH=500 HARD=560 bash bench/gpu_full.sh      # local test: DEV=cpu PY=.venv/bin/python
set -u
cd "$(dirname "$0")/.."
[ -d .gpu/site ] || { echo "run bench/gpu_prepare.sh first" >&2; exit 2; }
export PYTHONPATH=$PWD/.gpu/site CTXLIB_CACHE=$PWD/.gpu/cache PYTHONUNBUFFERED=1
PY=${PY:-python3}; DEV=${DEV:-cuda}; STRETCH=${STRETCH:-480}; HARD=${HARD:-540}
OUT=${OUT:-/tmp/gpuout}; mkdir -p "$OUT"
SPECS=${SPECS:-"bert:long elmo:long gpt:default"}
(nvidia-smi --query-gpu=name,memory.total --format=csv; $PY -c "import torch;print(torch.__version__, torch.cuda.is_available())") > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
R=/tmp/runs; rm -rf $R; mkdir -p $R
for s in $SPECS; do k=${s%%:*}; p=${s##*:}
  ( timeout $HARD $PY -m ctxlib train $k --preset $p --device $DEV --stretch $STRETCH --out $R/$k > $R/$k.log 2>&1; echo "$k rc=$? at $SECONDS s" >> $R/rc.txt ) &
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do sleep 20; echo "t=$SECONDS"; for s in $SPECS; do k=${s%%:*}; echo "  $k $(tr '\r' '\n' < $R/$k.log | grep -o '[0-9]*/[0-9]* \[[^]]*\]' | tail -1)"; done; done
wait
cat $R/rc.txt
for s in $SPECS; do k=${s%%:*}; tar -C $R -czf "$OUT/$k.tgz" --exclude resume.pt $k; tr '\r' '\n' < $R/$k.log | tail -40 > "$OUT/$k.log"; done
ls -la "$OUT"
