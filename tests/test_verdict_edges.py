"""ctxlib.verdict edges that bench/mutation.sh (scope `verdict`) showed no test pinned: counts that are more than
one, and a layer exactly at the tie line of best_layers."""

from ctxlib.verdict import EPS, MARGIN, Comparison, best_layers, counts


def _c(a, b):
    return Comparison("task_score", "pos", "elmo", a, "word2vec", b, 0.01)


def test_counts_add_up_over_several_comparisons_of_one_outcome():
    cs = [_c(0.9, 0.8), _c(0.95, 0.8), _c(0.99, 0.8), _c(0.7, 0.8), _c(None, 0.8), _c(0.8, None)]
    assert counts(cs) == {"win": 3, "tie": 0, "loss": 1, "missing": 2}
    assert sum(counts(cs).values()) == len(cs)


def test_a_layer_exactly_at_the_tie_line_is_not_tied():
    """Tied means *less than* MARGIN (less the float slack) below the top: a layer exactly that far below is not."""
    line = MARGIN - EPS
    assert best_layers([0.0, line]) == (1, 1, 1)  # 0.0 is exactly `line` below the top
    assert best_layers([line * 0.5, line]) == (1, 0, 1)  # half that: tied
