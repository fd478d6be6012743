"""helpers.checks.projections, lesson 06: predicted shapes, and seed 003's input
shrunk.

Each wrong answer is written as a learner would write it; a prediction's known
mistake is also run twice, for the staged hints.
"""

from helpers.checks import check_predict_shapes, check_shrink_prediction
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def shapes(n, d_model, d_k, d_v):
    return {
        "Q": (n, d_k),
        "K": (n, d_k),
        "V": (n, d_v),
        "scores": (n, n),
        "output": (n, d_v),
    }


def shapes_as_lists(n, d_model, d_k, d_v):
    return {k: list(v) for k, v in shapes(n, d_model, d_k, d_v).items()}


def shrink(c):
    return c**2, "flatter" if c > 1 else "sharper"


# --------------------------------------------------------------------------
# Wrong answers
# --------------------------------------------------------------------------


def shapes_output_d_k(n, d_model, d_k, d_v):
    return {**shapes(n, d_model, d_k, d_v), "output": (n, d_k)}


def shapes_scores_d_k(n, d_model, d_k, d_v):
    return {**shapes(n, d_model, d_k, d_v), "scores": (n, d_k)}


def shapes_v_d_k(n, d_model, d_k, d_v):
    return {**shapes(n, d_model, d_k, d_v), "V": (n, d_k)}


def shapes_unprojected(n, d_model, d_k, d_v):
    return {**shapes(n, d_model, d_k, d_v), "Q": (n, d_model)}


def shrink_inverse(c):
    return 1 / c**2, "flatter" if c > 1 else "sharper"


def shrink_linear(c):
    return c, "flatter" if c > 1 else "sharper"


def shrink_always_flatter(c):
    return c**2, "flatter"


RIGHT = [
    right(
        check_predict_shapes,
        shapes,
        prints="✓ check_predict_shapes: 4 sets of sizes passed",
    ),
    right(
        check_shrink_prediction,
        shrink,
        prints=r"✓ check_shrink_prediction: 3 values of c passed\. .+",
    ),
]

WRONG = [
    *wrong(
        check_predict_shapes,
        [
            (shapes_output_d_k, "`output` rows have the size of a query or key"),
            (shapes_scores_d_k, "one column per key"),
            (shapes_v_d_k, "`V` has d_k columns"),
            (shapes_unprojected, "still has d_model columns"),
            (shapes_as_lists, "a shape is a tuple"),
        ],
    ),
    *wrong(
        check_shrink_prediction,
        [
            (shrink_linear, "your factor is off"),
            (shrink_always_flatter, "the wrong way round"),
            (shrink_inverse, "the factor asked for is the one they are divided by"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def test_shrink_hints_come_in_steps(capsys):
    assert_staged(
        check_shrink_prediction, (shrink_always_flatter,), "wrong way", capsys
    )
