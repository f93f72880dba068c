#!/usr/bin/env bash
# Measure and plot redis-bf's false-positive rates (scripts/fp_plot.py): builds the module if
# needed, makes a Python venv under target/fp-plot-venv with redis and matplotlib from PyPI, and
# writes docs/fp-rates.csv and docs/fp-rates.png (and the CSVs of the window, cuckoo and Ribbon
# parts). Arguments go to fp_plot.py (--probes N, --out-dir DIR, --parts fill,window,cuckoo,ribbon).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${BF_MODULE:-}" ]; then
  cargo build --release
fi
venv=target/fp-plot-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import redis, matplotlib' 2>/dev/null; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check redis matplotlib
fi
exec "$venv/bin/python" scripts/fp_plot.py "$@"
