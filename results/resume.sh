#!/usr/bin/env bash
# Resume the tuned suite from docs/leaderboard-results.tar.xz, one dataset at a time (every
# method on it), cheapest first, packing the store back into the archive after each dataset.
# Run from the root of a checkout of main; the units are computed by a worktree at the
# suite's commit (results/README.md), so every method's units come from one commit.
#
#   setsid nohup bash results/resume.sh > /dev/null 2>&1 &     # in the background
#
# Environment: DATASETS (names, in order), METHODS (comma-separated, default: the suite's),
# COMMIT (the worktree's commit), SUITE_DIR (the worktree), STORE (the result store, default
# $SUITE_DIR/outputs/store; methods rerun at a later commit share it through this).
set -euo pipefail
COMMIT=${COMMIT:-8c6de7e}
MAIN=$(pwd)
SUITE=${SUITE_DIR:-$MAIN/../suite}
ARCHIVE=$MAIN/docs/leaderboard-results.tar.xz
DATASETS=${DATASETS:-"emotions genbase medical cal500 yeast yeastcc yeastmf enron yeastbp languagelog
mirflickr5k slashdot recreation arts science corel5k bibtex corel16k001 delicious"}
METHODS=${METHODS:-}

[ -d "$SUITE" ] || git worktree add --detach "$SUITE" "$COMMIT"
cd "$SUITE"
[ "$(git rev-parse --short=7 HEAD)" = "${COMMIT:0:7}" ] || { echo "error: $SUITE is not at $COMMIT" >&2; exit 2; }
STORE_OPTION=${STORE:+"results_store=$STORE"}  # the default store leaves the command as the suite's
STORE=${STORE:-$SUITE/outputs/store}
[ -d "$STORE" ] || { mkdir -p "$STORE" && tar -xJf "$ARCHIVE" --strip-components=2 -C "$STORE"; }
mkdir -p outputs/logs
for dataset in $DATASETS; do
    case $dataset in
        yeastbp | yeastcc | yeastmf | mirflickr5k) cases="+experiment/suite_case=$dataset" ;;
        *) cases="+experiment/suite_case=glob(${dataset}_*)" ;;
    esac
    echo "$(date +%FT%T) $dataset ${METHODS:-every method} at $COMMIT" | tee -a outputs/logs/resume.log
    python -m pmlbench -m +experiment=suite "$cases" ${METHODS:+"method=$METHODS"} \
        ${STORE_OPTION:+"$STORE_OPTION"} hydra/launcher=joblib >>"outputs/logs/suite_$dataset.log" 2>&1
    python scripts/pack_leaderboard_results.py "$STORE" --out "$ARCHIVE" | tee -a outputs/logs/resume.log
done
