"""Conversation rows: a test row per answered turn of a multi-turn conversation.

Beside the one-turn row (`instruction`, `reference`), a row of the source may hold:

- `turns`: the user's messages, one per turn (MT-Bench's question.jsonl: `question_id`, `category`, `turns`), with an
  optional `reference` list, one per turn (null for a turn without one). Turn k becomes the row `<id>/turn-<k>`,
  answered after the model's own answers to the turns before it;
- `messages`: a chat in role/content form (an optional system message, then user and assistant in turn), whose
  assistant turns are given and whose last message, a user's, is answered: one row, with an optional `reference`
  text (a right answer to that last message).

Each row's `history` is the conversation before its user message; an assistant message whose content is None stands
for the model's own answer to that earlier turn, filled in at generation (`generation.answers`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from datasets import Dataset, Features, List, Value

from llm_engineering.evaluation import columns as col

ID_ALIASES = (col.ID, "question_id")  # MT-Bench numbers its questions `question_id`
ROLES = ("system", "user", "assistant")
MESSAGE = {"role": Value("string"), "content": Value("string")}
FEATURES = Features({col.ID: Value("string"), col.INSTRUCTION: Value("string"), col.REFERENCE: Value("string"),
                     col.CONVERSATION_ID: Value("string"), col.TURN: Value("int32"), col.HISTORY: List(MESSAGE)})
ORDER = "the roles go: an optional system message first, then user and assistant in turn, ending with the user message to answer"


@dataclass(frozen=True)
class TurnRow:
    """One answered turn: its user message, its reference (None: none given) and the conversation before it."""

    id: str
    instruction: str
    reference: Optional[str]
    conversation_id: str
    turn: int
    history: list[dict[str, Optional[str]]] = field(default_factory=list)


def is_conversation_split(dataset: Dataset) -> bool:
    return col.TURNS in dataset.column_names or col.MESSAGES in dataset.column_names


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def from_turns(row_id: str, turns: Any, reference: Any) -> tuple[list[TurnRow], list[str]]:
    """A `turns` row's rows, one per turn, or the problems that stop it."""
    if not isinstance(turns, list) or not turns:
        return [], [f"{col.TURNS!r} must be a non-empty list of the user's messages, one per turn"]
    problems = [f"turn {k} is empty or not text: write the user's message of every turn, or drop the turn"
                for k, text in enumerate(turns, 1) if not _is_text(text)]
    references = [None] * len(turns) if reference is None else reference
    if not isinstance(references, list) or len(references) != len(turns):
        given = f"{len(references)} item(s)" if isinstance(references, list) else "one text"
        problems.append(f"'reference' has {given} for {len(turns)} turns: give a list of one reference per turn (null "
                        f"for a turn without one), or no reference")
    else:
        problems += [f"the reference of turn {k} is empty or not text: write it, or put null for no reference"
                     for k, text in enumerate(references, 1) if text is not None and not _is_text(text)]
    if problems:
        return [], problems
    rows: list[TurnRow] = []
    history: list[dict[str, Optional[str]]] = []
    for k, (text, answer) in enumerate(zip(turns, references), 1):
        rows.append(TurnRow(f"{row_id}/turn-{k}", text, answer, row_id, k, list(history)))
        history += [{"role": "user", "content": text}, {"role": "assistant", "content": None}]
    return rows, []


def _order_problem(roles: list[str]) -> Optional[str]:
    body = roles[1:] if roles[0] == "system" else roles
    for k, role in enumerate(body):
        expected = "user" if k % 2 == 0 else "assistant"
        if role != expected:
            return f"message {k + 1 + len(roles) - len(body)} is {role!r} where {expected!r} belongs: {ORDER}"
    if not body or body[-1] != "user":
        return f"the last message is {roles[-1]!r}: {ORDER} (the answer to it is the model's)"
    return None


def from_messages(row_id: str, messages: Any, reference: Any) -> tuple[list[TurnRow], list[str]]:
    """A `messages` row's one row (its last user message answered after the given turns), or the problems."""
    if not isinstance(messages, list) or not messages:
        return [], [f"{col.MESSAGES!r} must be a non-empty list of {{role, content}} messages; {ORDER}"]
    problems = []
    for k, message in enumerate(messages, 1):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ROLES:
            problems.append(f"message {k} has role {role!r}: give each message a role, one of {list(ROLES)}")
        elif not _is_text(message.get("content")):
            problems.append(f"message {k} ({role}) is empty or not text: write its content, or drop the message")
    if not problems and (order := _order_problem([m["role"] for m in messages])):
        problems.append(order)
    if reference is not None and not _is_text(reference):
        problems.append("'reference' of a messages row is one text, a right answer to its last user message, or none")
    if problems:
        return [], problems
    history = [{"role": m["role"], "content": m["content"]} for m in messages[:-1]]
    turn = sum(m["role"] == "user" for m in messages)
    return [TurnRow(row_id, messages[-1]["content"], reference, row_id, turn, history)], []


def from_instruction(row_id: str, instruction: Any, reference: Any, name: str) -> tuple[list[TurnRow], list[str]]:
    """A one-turn row among conversations: as in a one-turn split, the instruction is needed (`name`: its column),
    the reference is optional."""
    if not _is_text(instruction):
        return [], [f"empty or non-text {name!r}"]
    return [TurnRow(row_id, instruction, reference if _is_text(reference) else None, row_id, 1)], []


def conversation_rows(dataset: Dataset, id_columns: Sequence[str], instruction_columns: Sequence[str],
                      reference_columns: Sequence[str]) -> tuple[list[TurnRow], list[str]]:
    """Every row of a split with `turns` or `messages` rows as its answered turns; and the problems, each naming the
    row and the fix (a row with none of `turns`, `messages` and an instruction is a one-turn row missing its text).
    The `*_columns`: the columns of each role (`dataset.role_columns`), the first non-empty one read per row (one file
    may hold both ids: one-turn rows' and MT-Bench's)."""
    names = dataset.column_names
    id_columns, references = list(id_columns), list(reference_columns)
    instruction = next(iter(instruction_columns), col.INSTRUCTION)
    used = [c for c in (*id_columns, instruction, col.TURNS, col.MESSAGES, *references) if c in names]
    columns = dataset.select_columns(list(dict.fromkeys(used))).to_dict()
    rows: list[TurnRow] = []
    problems: list[str] = []
    for row, values in enumerate(zip(*columns.values())):
        fields = dict(zip(columns, values))
        given = [fields[name] for name in id_columns if fields[name] is not None and str(fields[name]).strip()]
        raw_id = given[0] if given else None if id_columns else row
        if raw_id is None:
            problems.append(f"row {row}: no id; give every row an id ({' or '.join(id_columns)}), or number the rows "
                            f"with --column id={col.NO_COLUMN}")
            continue
        reference = next((fields[name] for name in references if fields[name] is not None), None)
        if fields.get(col.TURNS) is not None:
            found, wrong = from_turns(str(raw_id), fields[col.TURNS], reference)
        elif fields.get(col.MESSAGES) is not None:
            found, wrong = from_messages(str(raw_id), fields[col.MESSAGES], reference)
        else:
            found, wrong = from_instruction(str(raw_id), fields.get(instruction), reference, instruction)
        rows += found
        problems += [f"row {row} (id {raw_id}): {problem}" for problem in wrong]
    return rows, problems


def as_split(rows: list[TurnRow]) -> Dataset:
    """The test split of a conversation split's rows (columns `FEATURES`)."""
    return Dataset.from_dict({name: [getattr(r, name) for r in rows] for name in FEATURES}, features=FEATURES)
