"""What a conversation's second turn must be, however it was generated (resumed or not, in process or on Ray): asked
after the model's own answer to the first turn of the same sample, in the model's chat template."""

from functools import cache

from llm_engineering.evaluation import columns as col


@cache
def _tokenizer(model_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_path)


def assert_second_turns_follow_their_first(generations, model="smollm2-135m"):
    """Each second turn's conversation is its own sample's first question and answer, and its prompt is `model`'s chat
    template applied to that conversation and its own question (the generation prompt after it)."""
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.settings import get_settings

    tokenizer = _tokenizer(resolve_model(model, get_settings().MODEL_CACHE_DIR).path)
    rows = {(r[col.ID], r[col.SAMPLE]): r for r in generations.to_list()}
    seconds = [row for row in rows.values() if row[col.TURN] == 2]
    assert seconds, "no second turn"
    for row in seconds:
        first = rows[(f"{row[col.CONVERSATION_ID]}/turn-1", row[col.SAMPLE])]
        history = [{"role": "user", "content": first[col.INSTRUCTION]}, {"role": "assistant", "content": first[col.ANSWER]}]
        assert row[col.HISTORY] == history
        assert row[col.PROMPT] == tokenizer.apply_chat_template(
            history + [{"role": "user", "content": row[col.INSTRUCTION]}], tokenize=False, add_generation_prompt=True)
