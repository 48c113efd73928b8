"""The report's row browser: every test item with each model's answer, reference, scores, analyses and
errors; sortable (click a header), filterable (by model, failed only, text), long texts collapsed; a person
labels rows in it (`labelling`).

Plain HTML and a few lines of inline script: the report stays one self-contained file (no network).
"""

from __future__ import annotations

import html
from typing import Optional

from llm_engineering.evaluation.report.labelling import labelling_html
from llm_engineering.evaluation.stored.summary import AnswerView, EvaluationSummary, ItemView

_PREVIEW_CHARS = 160

# Sorting compares each cell's data-value (numbers as numbers); filters hide a model's cells and the
# rows without a failed answer among the models shown.
_SCRIPT = """
(function () {
  const table = document.getElementById('rows'), body = table.tBodies[0];
  const model = document.getElementById('model-filter'), failed = document.getElementById('failed-only');
  const search = document.getElementById('row-search'), count = document.getElementById('shown-count');
  function apply() {
    const m = model.value, q = search.value.toLowerCase();
    let shown = 0;
    table.querySelectorAll('[data-model]').forEach(c => { c.hidden = m !== '' && c.dataset.model !== m; });
    for (const row of body.rows) {
      const answers = [...row.querySelectorAll('td[data-failed]')].filter(c => !c.hidden);
      const keep = (!failed.checked || answers.some(c => c.dataset.failed === '1'))
        && (!q || row.textContent.toLowerCase().includes(q));
      row.hidden = !keep;
      if (keep) shown++;
    }
    count.textContent = shown + ' of ' + body.rows.length + ' items shown';
  }
  function value(row, i) {
    const text = row.cells[i].dataset.value, number = parseFloat(text);
    return isNaN(number) ? text : number;
  }
  table.querySelectorAll('th[data-col]').forEach(th => th.addEventListener('click', () => {
    const i = +th.dataset.col, dir = th.dataset.dir === 'asc' ? 'desc' : 'asc';
    table.querySelectorAll('th[data-col]').forEach(h => { delete h.dataset.dir; });
    th.dataset.dir = dir;
    const rows = [...body.rows].sort((a, b) => {
      const x = value(a, i), y = value(b, i);
      const order = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
      return dir === 'asc' ? order : -order;
    });
    rows.forEach(row => body.appendChild(row));
  }));
  [model, failed, search].forEach(e => { e.addEventListener('input', apply); e.addEventListener('change', apply); });
  apply();
})();
"""

_STYLE = (
    "#rows td{vertical-align:top;max-width:28em}#rows th[data-col]{cursor:pointer;background:#f4f4f4}"
    "#rows th[data-dir=asc]::after{content:' \\25B2'}#rows th[data-dir=desc]::after{content:' \\25BC'}"
    "#rows td[data-failed='1']{background:#fdd}.failed-check{color:#a00}"
    ".browser-controls{margin:8px 0}.browser-controls>*{margin-right:12px}"
)


def _long_text(text: str) -> str:
    """Short texts as they are; long ones collapsed behind their first words."""
    if len(text) <= _PREVIEW_CHARS:
        return html.escape(text)
    return (f"<details><summary>{html.escape(text[:_PREVIEW_CHARS])}…</summary>"
            f"<div style='white-space:pre-wrap'>{html.escape(text)}</div></details>")


def _cell(content: str, value: object, *, model: Optional[str] = None, failed: Optional[bool] = None,
          verdict: bool = False) -> str:
    attributes = f" data-value='{html.escape(str(value)[:_PREVIEW_CHARS], quote=True)}'"
    if verdict:  # the judge's: hidden while a person labels blind
        attributes += " class='verdict'"
    if model is not None:
        attributes += f" data-model='{html.escape(model, quote=True)}'"
    if failed is not None:
        attributes += f" data-failed='{int(failed)}'"
    return f"<td{attributes}>{content}</td>"


def _conversation(answer: AnswerView) -> str:
    """A turn's conversation before its user message, collapsed: this model's own earlier answers in it."""
    if not answer.history:
        return ""
    turns = "".join(f"<p><strong>{html.escape(m['role'])}:</strong> {_long_text(m['content'])}</p>"
                    for m in answer.history)
    return f"<details class='conversation'><summary>conversation so far</summary>{turns}</details>"


def _answer_body(answer: AnswerView) -> str:
    body = _conversation(answer) + _long_text(answer.answer)
    if answer.finish_reason == "length":
        body += "<br><em>(cut by max_tokens)</em>"
    if answer.error:
        body += f"<br><strong>judge error:</strong> {html.escape(answer.error)}"
    if answer.confidence is not None or answer.escalated:
        sure = f"the judge's confidence {answer.confidence:.2f}" if answer.confidence is not None else ""
        again = "judged again by the second judge" if answer.escalated else ""
        body += f"<br><small class='verdict'>{'; '.join(part for part in (sure, again) if part)}</small>"
    measured = " · ".join(f"{name} {value:.2f}" for name, value in answer.metrics.items() if value is not None)
    if measured:
        body += f"<br><small class='metrics'>{html.escape(measured)}</small>"
    if answer.checks:
        passed = sum(c.passed for c in answer.checks)
        body += f"<br><small class='checks'>checks: {passed} of {len(answer.checks)} passed</small>"
        for c in (c for c in answer.checks if not c.passed):
            body += (f"<br><span class='failed-check'>failed check {html.escape(c.type)} {html.escape(c.value)}: "
                     f"{html.escape(c.reason or '')}</span>")
    for name, analysis in answer.analyses.items():
        body += (f"<details class='verdict'><summary>{html.escape(name)} analysis</summary>{html.escape(analysis)}"
                 "</details>")
    return body


def _verdict_text(answer: AnswerView, name: str) -> str:
    score, expected = answer.scores.get(name), answer.expected.get(name)
    if score is None:
        return "failed"
    return f"{score}" + (f" <small>({expected:.2f})</small>" if expected is not None else "")


def _answer_cells(answers: list[AnswerView], model: str, criteria: list[str], with_similarity: bool,
                  with_checks: bool = False) -> str:
    """A model's cells of one item: its answer (several answers per prompt: side by side, numbered), each
    criterion's verdict (several: each sample's, sorted by their mean), the similarity and the share of checks passed."""
    if not answers:  # this model has no row for the item
        return "".join(_cell("", "", model=model) for _ in range(1 + len(criteria) + with_similarity + with_checks))
    body = _answer_body(answers[0])
    if len(answers) > 1:  # side by side, one column per sample
        body = "<div style='display:flex;gap:12px'>" + "".join(
            f"<div class='sample' style='flex:1;min-width:12em'><strong>sample {a.sample + 1}</strong> "
            f"{_answer_body(a)}</div>" for a in answers) + "</div>"
    failed = any(a.failed for a in answers)
    cells = [_cell(body, len(answers[0].answer), model=model, failed=failed)]  # an answer column sorts by length
    for name in criteria:
        values = [a.expected.get(name) if a.expected.get(name) is not None else a.scores.get(name) for a in answers]
        if all(value is None for value in values):
            cells.append(_cell("failed", -1, model=model, verdict=True))
            continue
        shown = " · ".join(_verdict_text(a, name) for a in answers)
        valid = [value for value in values if value is not None]
        cells.append(_cell(shown, sum(valid) / len(valid), model=model, verdict=True))
    if with_similarity:
        similarity = answers[0].similarity
        cells.append(_cell("" if similarity is None else f"{similarity:.2f}", -1 if similarity is None else similarity,
                           model=model, verdict=True))
    if with_checks:
        checked = [a for a in answers if a.checks]
        shares = [sum(c.passed for c in a.checks) / len(a.checks) for a in checked]
        cells.append(_cell(" · ".join(f"{sum(c.passed for c in a.checks)}/{len(a.checks)}" for a in checked),
                           sum(shares) / len(shares) if shares else -1, model=model))
    return "".join(cells)


def _row(item: ItemView, models: list[str], criteria: list[str], with_similarity: bool, with_checks: bool = False) -> str:
    by_model: dict[str, list[AnswerView]] = {}
    for answer in item.answers:
        by_model.setdefault(answer.model_id, []).append(answer)
    worst = item.worst()
    cells = [
        _cell(html.escape(item.id), item.id),
        _cell("failed" if worst < 0 else f"{worst:g}", worst, verdict=True),
        _cell((f"<em>turn {item.turn}:</em> " if item.turn > 1 else "")
              + (f"<em>{html.escape(item.category)}:</em> " if item.category else "") + _long_text(item.instruction),
              item.instruction),
        _cell(_long_text(item.reference) if item.reference else "<em>none: judged without one</em>", item.reference),
    ]
    cells += [_answer_cells(by_model.get(m, []), m, criteria, with_similarity, with_checks) for m in models]
    sure = [a.confidence for a in item.answers if a.confidence is not None]  # the least sure verdict of the row
    confidence = f" data-confidence='{min(sure)}'" if sure else ""
    return f"<tr tabindex='0' data-id='{html.escape(item.id, quote=True)}'{confidence}>" + "".join(cells) + "</tr>"


def row_browser_html(summary: EvaluationSummary) -> str:
    """The row browser section of the report ('' when the summary holds no items)."""
    items = sorted(summary.items, key=ItemView.worst)  # worst first; sorted() keeps the test split's order on ties
    if not items:
        return ""
    models = [m.model_id for m in summary.models]
    with_similarity = any(a.similarity is not None for item in items for a in item.answers)
    with_checks = any(a.checks for item in items for a in item.answers)
    # (heading, the model whose column it is: None for the item's own)
    headers: list[tuple[str, Optional[str]]] = [("id", None), ("worst total score", None), ("instruction", None),
                                                ("reference", None)]
    for model in models:
        headers += [(f"{model}: answer (length)", model)] + [(f"{model}: {c}", model) for c in summary.criteria]
        headers += [(f"{model}: similarity", model)] if with_similarity else []
        headers += [(f"{model}: checks passed", model)] if with_checks else []
    head = "".join(
        f"<th data-col='{i}'" + (f" data-model='{html.escape(m, quote=True)}'" if m else "") + f">{html.escape(h)}</th>"
        for i, (h, m) in enumerate(headers))
    options = "<option value=''>all models</option>" + "".join(
        f"<option value='{html.escape(m, quote=True)}'>{html.escape(m)}</option>" for m in models)
    kept = (f"the {len(items)} worst of {summary.items_total} items (the report keeps at most {len(items)})"
            if summary.items_total > len(items) else f"{len(items)} items")
    controls, script = labelling_html(summary, items)
    return (
        f"<style>{_STYLE}</style><h3 id='row-browser'>Rows</h3>"
        f"<p>{kept}, worst first: click a header to sort; scores are the judge's integer score with the "
        f"expected (probability-weighted) score in brackets; a red answer has no valid verdict.</p>"
        "<div class='browser-controls'>"
        f"<label>Model <select id='model-filter'>{options}</select></label>"
        "<label><input type='checkbox' id='failed-only'> failed only</label>"
        "<label>Search <input type='search' id='row-search' placeholder='text in any cell'></label>"
        "<span id='shown-count'></span></div>" + controls +
        f"<table id='rows'><thead><tr>{head}</tr></thead><tbody>"
        + "".join(_row(item, models, summary.criteria, with_similarity, with_checks) for item in items)
        + f"</tbody></table><script>{_SCRIPT}</script>{script}"
    )
