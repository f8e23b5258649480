#!/bin/sh
# Seeds the fuzz corpora with the library scenarios and the real manifests.
set -e
cd "$(dirname "$0")"
mkdir -p corpus/load corpus/simulate
cp ../scenarios/*.yaml corpus/load/
cp ../scenarios/*.yaml corpus/simulate/
find "${REAL_MANIFESTS:-../../shared/real-manifests}" ../tests/fixtures -name '*.yaml' -exec cp {} corpus/load/ \; 2>/dev/null || true
