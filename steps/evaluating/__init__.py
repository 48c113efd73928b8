from steps.evaluating.check_labels import check_labels
from steps.evaluating.check_trust import check_trust
from steps.evaluating.compare_pairwise import compare_pairwise
from steps.evaluating.evaluate_answers import evaluate_answers
from steps.evaluating.generate_answers import generate_answers
from steps.evaluating.load_published_results import load_published_results
from steps.evaluating.load_test_split import load_test_split
from steps.evaluating.publish_results import publish_results
from steps.evaluating.summarize import summarize
from steps.evaluating.write_checklists import write_checklists

__all__ = [
    "check_labels", "check_trust", "compare_pairwise",
    "evaluate_answers", "generate_answers", "load_published_results", "load_test_split", "publish_results",
    "summarize", "write_checklists",
]
