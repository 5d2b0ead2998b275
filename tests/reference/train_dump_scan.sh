#!/bin/sh
# train_dump_scan.sh MODEL.json DIR [--loop ...]: train_dump through a scan.
# compare_grads.py runs its --driver as `DRIVER MODEL.json DIR --loop
# unrolled`; this wrapper trains the same model with "loop": "scan" and
# "residuals": $HS_RESIDUALS (save, remat or offload) instead, so the torch
# reference checks the reverse scan. $HS_TRAIN_DUMP is the train_dump binary.
set -e
model=$1; dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); d["residuals"]=sys.argv[2]; d["loop"]="scan"
json.dump(d, open(sys.argv[3], "w"))' "$model" "${HS_RESIDUALS:-save}" "$tmp/model.json"
"$HS_TRAIN_DUMP" "$tmp/model.json" "$dir" --loop scan
