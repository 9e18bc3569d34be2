#!/usr/bin/env bash
# Resume the tuned suite from results/tuned-suite-progress.tar.xz, one dataset at a time
# (every method on it), cheapest first, packing the store back into the archive after each
# dataset. Run from the root of a checkout of main; the units are computed by a worktree at
# the suite's commit (results/README.md), so every method's units come from one commit.
#
#   bash results/resume.sh            # in the background: setsid nohup bash results/resume.sh &
set -euo pipefail
COMMIT=8c6de7e
MAIN=$(pwd)
SUITE=${SUITE_DIR:-$MAIN/../suite}
ARCHIVE=$MAIN/results/tuned-suite-progress.tar.xz
DATASETS=${DATASETS:-"emotions genbase medical cal500 yeast yeastcc yeastmf enron yeastbp languagelog
mirflickr5k slashdot recreation arts science corel5k bibtex corel16k001 delicious"}

[ -d "$SUITE" ] || git worktree add --detach "$SUITE" "$COMMIT"
cd "$SUITE"
[ "$(git rev-parse --short=7 HEAD)" = "$COMMIT" ] || { echo "error: $SUITE is not at $COMMIT" >&2; exit 2; }
[ -d outputs/store ] || tar -xJf "$ARCHIVE"
mkdir -p outputs/logs
for dataset in $DATASETS; do
    case $dataset in
        yeastbp | yeastcc | yeastmf | mirflickr5k) cases="+experiment/suite_case=$dataset" ;;
        *) cases="+experiment/suite_case=glob(${dataset}_*)" ;;
    esac
    echo "$(date +%FT%T) $dataset" | tee -a outputs/logs/resume.log
    python -m pmlbench -m +experiment=suite "$cases" hydra/launcher=joblib \
        >>"outputs/logs/suite_$dataset.log" 2>&1
    python scripts/pack_leaderboard_results.py outputs/store --out "$ARCHIVE" | tee -a outputs/logs/resume.log
done
