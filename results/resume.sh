#!/usr/bin/env bash
# Resume the tuned suite from docs/leaderboard-results.tar.xz, one dataset at a time (every
# method on it), cheapest first, packing the store back into the archive after each dataset.
# Run from the root of a checkout of main. Each method's units are computed by a worktree at
# the one commit its units come from (PASSES below, results/README.md); all worktrees share
# the first one's store and cache, so the commands the records keep are the suite's own.
#
#   setsid nohup bash results/resume.sh > /dev/null 2>&1 &     # in the background
#
# Environment: DATASETS (names, in order), PASSES (lines "<commit> <methods|all>"), SUITE_DIR
# (the first pass's worktree; the others are beside it, named by their commit).
set -euo pipefail
MAIN=$(pwd)
SUITE=${SUITE_DIR:-$MAIN/../suite}
ARCHIVE=$MAIN/docs/leaderboard-results.tar.xz
DATASETS=${DATASETS:-"emotions genbase medical cal500 yeast yeastcc yeastmf enron yeastbp languagelog
mirflickr5k slashdot recreation arts science corel5k bibtex corel16k001 delicious"}
PASSES=${PASSES:-"8c6de7e mlknn,pml3er,ridge,particle_map,particle_vls,pml_ni,nlr,pml_ld,pmndp,pml_lenfn,schirn,pml_plr,pml_ma,pml_dda,pml_wfgalc
6b14bd0 plain,pml_lrs
de23cd4 lift
240302b pml_lrig"}

worktree() {  # worktree <commit> <dir>: a detached worktree at the commit
    [ -d "$2" ] || git -C "$MAIN" worktree add --detach "$2" "$1"
    [ "$(git -C "$2" rev-parse --short=7 HEAD)" = "${1:0:7}" ] || { echo "error: $2 is not at $1" >&2; exit 2; }
}
first=$(echo "$PASSES" | head -n 1 | cut -d' ' -f1)
worktree "$first" "$SUITE"
STORE=$SUITE/outputs/store
[ -d "$STORE" ] || { mkdir -p "$STORE" && tar -xJf "$ARCHIVE" --strip-components=2 -C "$STORE"; }
mkdir -p "$SUITE/outputs/logs" "$SUITE/outputs/cache"
while read -r commit _; do
    [ "$commit" = "$first" ] && continue
    dir=$SUITE-$commit
    worktree "$commit" "$dir"
    mkdir -p "$dir/outputs"
    for shared in store cache; do
        [ -e "$dir/outputs/$shared" ] || ln -s "$SUITE/outputs/$shared" "$dir/outputs/$shared"
    done
done <<<"$PASSES"
for dataset in $DATASETS; do
    case $dataset in
        yeastbp | yeastcc | yeastmf | mirflickr5k) cases="+experiment/suite_case=$dataset" ;;
        *) cases="+experiment/suite_case=glob(${dataset}_*)" ;;
    esac
    while read -r commit methods; do
        dir=$SUITE; [ "$commit" = "$first" ] || dir=$SUITE-$commit
        echo "$(date +%FT%T) $dataset at $commit: $methods" | tee -a "$SUITE/outputs/logs/resume.log"
        selected=(); [ "$methods" = all ] || selected=("method=$methods")
        (cd "$dir" && python -m pmlbench -m +experiment=suite "$cases" "${selected[@]}" hydra/launcher=joblib) \
            >>"$SUITE/outputs/logs/suite_$dataset.log" 2>&1
    done <<<"$PASSES"
    (cd "$SUITE" && python scripts/pack_leaderboard_results.py "$STORE" --out "$ARCHIVE") |
        tee -a "$SUITE/outputs/logs/resume.log"
done
