#!/usr/bin/env bash
# Mutation testing of the core modules (issue #17, item 4) with mutmut 3 (pinned in bench/requirements.txt; not in CI).
#
# Each module runs on its own, in a scratch copy of ctxlib/ and tests/ under $MUT_WORK, with only that module's fast
# test files as the runner (mutmut runs, for each mutant, the selected tests that cover the mutated function). The
# score is killed (incl. timeouts) / mutants tested; mutants no selected test reaches count as survivors (but see
# "covered" below).
#
#   bench/mutation.sh                       # every module below, smallest first
#   bench/mutation.sh analysis checkpoint   # some of them (names: the keys of TESTS)
#   CHILDREN=2 bench/mutation.sh ...        # parallel mutants (default 1: the machine is shared)
#   PY=/path/to/python bench/mutation.sh    # a Python with mutmut, pytest and the project's requirements
#   SRC=/a/copy bench/mutation.sh           # mutate and test another copy of ctxlib/ and tests/ (e.g. a "before")
#   MUT_WORK=/tmp/x ROOT=/a/checkout ...    # where the scratch copies go; the checkout (checkpoints/, .venv) to use
#
# It ends with a table: per scope killed/tested, the score, survivors, mutants no selected test reaches, timeouts,
# suspicious ones and the seconds taken, then the total over the scopes run.
# Survivors of a module: `cd $MUT_WORK/<name> && mutmut results` and `mutmut show <mutant>`.
set -euo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
PY=${PY:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=python
MUTMUT="$PY -m mutmut"
WORK=${MUT_WORK:-/tmp/ctxlab-mutation}
SRC=${SRC:-$ROOT}
CHILDREN=${CHILDREN:-1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}

# name -> "module(s) | fast test files (pytest args) [| covered]"
# "covered": mutate only the lines those tests execute (mutmut's mutate_only_covered_lines). word2vec_sgd.py uses it:
# of that file only its negative-sampling table, subsampling and windows are in scope (its chunk updates and worker
# loop, like word2vec.py's training loop, evaluation and presets, are exercised by tests that train models, seconds to
# minutes per mutant on two cores). In such a scope a mutant no selected test reaches sits on a line that ran only
# at import: the `def` line of a function outside the scope, whose default arguments mutmut mutates (before the split
# into word2vec_sgd.py: word2vec.py's fit, train, pos_agreement). Those are shown in the "no tests" column, marked
# "(out)", and left out of the score.
# tests/test_lesson.py's tests by name (see [lesson] below)
LESSON_UNIT=""
for t in the_shipped_lesson_is_valid_and_follows_the_lecture answer_placeholders_are_checked_and_filled \
  fact_words_match_the_english_catalogue clean_pair a_utf8_bom_and_a_str_are_read bad_json \
  gb18030_and_binary_files_are_refused_with_a_message malformed_lessons_name_the_problem the_second_step_is_named \
  every_message_is_in_both_catalogues cosine_view_word2vec_gives_one_vector_the_others_do_not \
  cosine_view_unknown_word_and_missing_model fill_mask_view_gives_the_answer_rank_beyond_the_top5 \
  attention_view_checks_the_layer_and_head_against_the_model next_char_view; do
  LESSON_UNIT+=" tests/test_lesson.py::test_$t"
done
declare -A TESTS=(
  [scalar_mix]="ctxlib/models/scalar_mix.py | tests/test_scalar_mix.py"
  [sgns]="ctxlib/training/sgns.py | tests/test_sgns.py tests/test_word2vec.py::test_skipgram_step_matches_a_numpy_loop"
  [analysis]="ctxlib/analysis.py | tests/test_analysis.py"
  # checkpoint.unzip (the zips the training page downloads and reads): test_checkpoint_zip.py, and test_live.py's zip tests
  [checkpoint]="ctxlib/checkpoint.py | tests/test_checkpoint.py tests/test_checkpoint_zip.py tests/test_live.py::test_zip_in_a_top_folder_loads tests/test_live.py::test_bad_zips_are_refused_clearly tests/test_live.py::test_zip_size_cap"
  [encoder]="ctxlib/encoder.py | tests/test_encoder.py"
  [explore]="ctxlib/explore.py ctxlib/explore_atlas.py | tests/test_explore.py tests/test_explore_atlas_cache.py"  # the Streamlit-free page logic
  [negatives]="ctxlib/training/word2vec_sgd.py | tests/test_w2v_sampling.py tests/test_negatives.py tests/test_word2vec.py -k negative_table or keep_prob or windows | covered"
  # masking and pair building: all of bert_data.py (documents, examples, masking, collate, the batch iterators and
  # their resume) with its corpus-free tests (test_bert_data.py's statistics on real text load the corpus: ~10 s a mutant)
  [bert_data]="ctxlib/training/bert_data.py ctxlib/training/bert_batches.py | tests/test_masking.py tests/test_bert_data_units.py"
  # the earlier, narrower scope (kept for before/after): the lines of bert_data.py its example/masking/collate tests run
  [masking]="ctxlib/training/bert_data.py | tests/test_masking.py tests/test_bert_data.py -k structure or proportions or nsp_pairs or random_replacement or collate_labels or collate_pads or mask_tokens | covered"
  # scopes of several modules (space-separated): mutated together, against the tests of all of them
  [verdict]="ctxlib/verdict.py | tests/test_results_rules.py tests/test_verdict_edges.py"  # the Results verdict rules alone: the smallest scope
  [results]="ctxlib/results.py ctxlib/results_bert.py ctxlib/results_files.py ctxlib/verdict.py | tests/test_results.py tests/test_results_rules.py tests/test_verdict_edges.py tests/test_results_mutants.py tests/test_results_edges.py"
  # every step's view and answer on stand-in models (test_lesson_steps/answers), file checks (test_lesson_parse),
  # the live answer, and test_lesson.py by name less test_positions_step_measures_layer0: it loads the shipped BERT
  # and GPT (~5 s) and reads the shipped lesson, so every parser mutant would run it (test_lesson_steps.py measures
  # the positions step on tiny BERTs); the walk of the shipped lesson (test_app_lesson.py) takes minutes
  [lesson]="ctxlib/lesson.py ctxlib/lesson_compute.py ctxlib/lesson_facts.py | tests/test_lesson_steps.py tests/test_lesson_answers.py tests/test_lesson_parse.py tests/test_lesson_live.py $LESSON_UNIT"
  # the URL state and the language: AppTests with stand-in models (~1 s each)
  [state]="ctxlib/app/state.py ctxlib/app/i18n.py | tests/test_state_mutants.py tests/test_url_params.py tests/test_url_edges.py tests/test_locale.py tests/test_strings.py"
  # `serve` and the two modules it was split into. The proxy tests need haproxy (apt-get install haproxy); the
  # start/stop integration test is left out (~1 min a mutant), so the scope is "covered": the process supervisor
  # (serve_proc.Supervisor), which only that test runs, is not mutated; test_serve_text.py runs serve.main to the end
  # with a stand-in Supervisor
  [serve]="ctxlib/serve.py ctxlib/serve_config.py ctxlib/serve_proc.py | tests/test_serve_mutants.py tests/test_serve_text.py tests/test_serve.py -k not two_workers | covered"
  # the tune's pieces on models built in the test (~1 s a mutant); test_sense_tune.py's tunes that learn to separate
  # senses and test_sense_tune_trainer.py's Trainer checks build or train larger fixtures (5-15 s a mutant) and stay out
  [sense_tune]="ctxlib/training/sense_tune.py | tests/test_sense_tune_units.py tests/test_sense_tune_record.py tests/test_sense_tune.py::test_supcon_loss_is_lower_when_same_labels_cluster"
  [triple]="ctxlib/triple.py | tests/test_triple.py tests/test_triple_honesty.py tests/test_triple_mutants.py"
  # (named test ids, not -k: a -k expression filters every listed file, and left out most of test_vocab_notes.py)
  [vocab_notes]="ctxlib/app/vocab_notes.py | tests/test_vocab_notes.py tests/test_app_type_token.py::test_unseen_word_flagged_per_model tests/test_app_type_token.py::test_known_word_is_not_flagged tests/test_app_type_token.py::test_heatmaps_share_one_colour_scale tests/test_app_type_token.py::test_nearest_words_come_with_their_scale"
)
# smallest module first (`results` holds `verdict`; both stay selectable by name)
ORDER=(scalar_mix sgns analysis checkpoint encoder explore negatives bert_data vocab_notes state serve triple results lesson
       sense_tune)
[ $# -gt 0 ] && ORDER=("$@")

summary=()
scores=()
for name in "${ORDER[@]}"; do
  spec=${TESTS[$name]:?"unknown module '$name' (one of: ${!TESTS[*]})"}
  IFS='|' read -r mod tests skip <<<"$spec"
  trim() { sed 's/^ *//; s/ *$//' <<<"$1"; }
  mod=$(trim "$mod"); tests=$(trim "$tests"); skip=$(trim "${skip:-}")
  read -r -a args <<<"$(echo "$tests" | sed 's/-k \(.*\)$/-k__KEXPR__/')"
  kexpr=$(echo "$tests" | sed -n 's/.*-k \(.*\)$/\1/p')
  dir=$WORK/$name
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$SRC" && tar --exclude=__pycache__ -cf - ctxlib tests pages bench docs app.py pyproject.toml) | tar -xf - -C "$dir"
  ln -s "$ROOT/checkpoints" "$dir/checkpoints"
  {
    echo "[mutmut]"
    echo "source_paths = ctxlib"
    echo "only_mutate ="
    for m in $mod; do echo "    $m"; done
    echo "also_copy ="
    echo "    tests"
    echo "    pages"
    echo "    docs"
    echo "    bench"
    echo "    app.py"
    echo "    checkpoints"
    echo "    pyproject.toml"
    echo "pytest_add_cli_args_test_selection ="
    for a in "${args[@]}"; do
      if [ "$a" = "-k__KEXPR__" ]; then echo "    -k"; echo "    $kexpr"; else echo "    $a"; fi
    done
    [ "$skip" = covered ] && echo "mutate_only_covered_lines = true"
    # each mutant forks from a process that has only imported pytest and collected the tests, not from the one that
    # ran them: a run leaves state behind (numba's threads after a UMAP projection hang a forked child; functools
    # caches filled by the clean run would hide mutants of the cached functions)
    echo "process_isolation = forkserver"
    echo "pytest_add_cli_args ="
    echo "    -q"
  } >"$dir/setup.cfg"
  echo "== $name: $mod (tests: $tests${skip:+; only the lines they cover})"
  t0=$(date +%s)
  (cd "$dir" && $MUTMUT run --max-children "$CHILDREN" >"$dir/run.log" 2>&1) || { echo "   mutmut failed: see $dir/run.log"; tail -5 "$dir/run.log"; }
  (cd "$dir" && $MUTMUT export-cicd-stats >/dev/null 2>&1) || true
  secs=$(( $(date +%s) - t0 ))
  line=$("$PY" - "$dir/mutants/mutmut-cicd-stats.json" "$name" "$secs" "$dir/score" "$skip" <<'PYEOF'
import json, sys
path, name, secs, score, skip = sys.argv[1:6]
try:
    s = json.load(open(path))
except OSError:
    print(f"{name:<11} {'no result':>15}"); raise SystemExit
out = skip == "covered"  # "no tests" here: lines run only at import (see the header), not in the score
tested = s["total"] - s.get("skipped", 0) - (s.get("no_tests", 0) if out else 0)
dead = s["killed"] + s.get("timeout", 0)
no_tests = f"{s.get('no_tests', 0)} (out)" if out and s.get("no_tests", 0) else s.get("no_tests", 0)
open(score, "w").write(f"{dead} {tested} {s['survived']} {0 if out else s.get('no_tests', 0)} {s.get('timeout', 0)} {s.get('suspicious', 0)} {secs}\n")
print(f"{name:<11} {f'{dead}/{tested}':>15} {100 * dead / max(tested, 1):6.1f}% {s['survived']:>9} {no_tests:>9} "
      f"{s.get('timeout', 0):>8} {s.get('suspicious', 0):>11} {secs:>7}")
PYEOF
)
  echo "   $line"
  summary+=("$line")
  scores+=("$dir/score")
done
echo
echo "mutation score per module (mutmut $($PY -c 'import importlib.metadata as m; print(m.version("mutmut"))'); killed includes timeouts;"
echo "'no tests' (mutants no selected test reaches) count as not killed; '(out)': outside a covered scope, not counted)"
printf '%-11s %15s %7s %9s %9s %8s %11s %7s\n' scope killed/tested score survived "no tests" timeout suspicious "time s"
printf '%s\n' "${summary[@]}"
"$PY" - "${scores[@]}" <<'PYEOF'
import sys
import os
rows = [list(map(int, open(p).read().split())) for p in sys.argv[1:] if os.path.isfile(p)]
if rows:
    t = [sum(c) for c in zip(*rows)]
    print(f"{'total':<11} {f'{t[0]}/{t[1]}':>15} {100 * t[0] / max(t[1], 1):6.1f}% {t[2]:>9} {t[3]:>9} {t[4]:>8} {t[5]:>11} {t[6]:>7}")
PYEOF
