#!/usr/bin/env bash
# device: the rest of the suite (everything but kb/torch/python/serve_session)
cd "$(dirname "$0")/.."
export KOPT_WHEEL=$(ls $PWD/dist/*.whl)
timeout 570 bash .carry/suite.sh -j8 --timeout 400 -E "kb|torch|python|serve_session"
