"""One preference for every source: a pairs file's numbers, the report's letters, a judge's verdict, the length rule."""

import pytest

from llm_engineering.evaluation import preference


@pytest.mark.parametrize("written, read", [(1, "A"), ("2", "B"), (" 0 ", "tie"), ("A", "A"), ("tie", "tie"),
                                           (3, None), ("a", None), (True, None), (None, None), (1.0, None)])
def test_a_written_preference_reads_as_one_of_a_b_tie(written, read):
    assert preference.read(written) == read


def test_the_longer_answer_rule_and_a_comparison_name_the_first_as_a():
    assert [preference.longer("long answer", "short"), preference.longer("x", "xy"), preference.longer(3, 3)] == \
        ["A", "B", "tie"]
    assert [preference.compare(0.7, 0.5), preference.compare(None, 0.5), preference.compare(2, 2)] == ["A", None, "tie"]


def test_swapping_the_two_answers_swaps_a_and_b_and_keeps_a_tie_and_a_failure():
    assert [preference.swapped(p) for p in ("A", "B", "tie", None)] == ["B", "A", "tie", None]
