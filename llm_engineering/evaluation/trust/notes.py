"""What the trust checks could and could not check on a split whose rows lack references, said once (the summary,
the console and the HTML report show these notes)."""

from __future__ import annotations


def trust_notes(rows: int, referenced: int, judge_check: bool, similarity: bool) -> list[str]:
    """The notes of a run's trust checks: `rows` checked (first answers of first turns), `referenced` of them with a
    reference answer; `judge_check` and `similarity`: whether those checks are on."""
    if referenced == rows or not rows:
        return []
    share = f"{referenced} of {rows} rows have a reference answer"
    if referenced >= 2:
        return [f"{share}: the report card and the similarity check use those {referenced}; the other rows are judged on "
                f"their instruction and answer alone and have no similarity."]
    made = ("The report card pairs each row's own answer (of the first model) with another row's answer: the mismatch "
            "tier alone, where the judge should score an answer to its own question above an answer to another one, "
            "though the own answer is not known to be right. " if judge_check else "")
    return [f"{share}: too few for the checks that need one. {made}Not made, for want of references: the harder tiers "
            f"(same_topic, truncated, corrupted, relation_swap, negation), the judge's rewording of right answers"
            + (", the similarity check and every row's similarity." if similarity else ".")]
