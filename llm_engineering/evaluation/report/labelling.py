"""Labelling in the report's row browser: the controls, the legend of the rubric's scale, the data the script
needs (run, rubric, scales, each row's answers) and the script itself (`labelling.js`, inlined: no network).

The labels it downloads are `--labels` files (`trust.labels`), with the run and rubric they were written for.
"""

from __future__ import annotations

import html
import json
from importlib import resources

from llm_engineering.evaluation.stored.summary import EvaluationSummary, ItemView

STYLE = (
    "#rows tr:focus{outline:none}#rows tr.current>td{background:#fffbe6}"
    "#rows tr.labelled>td:first-child{border-left:4px solid #39c}"
    ".label-set{margin-top:4px;white-space:nowrap}.label-set button{min-width:2.2em;margin:0 2px}"
    ".label-set button.on{background:#39c;color:#fff;border-color:#17a}.label-set.target{outline:2px solid #39c}"
    ".label-legend{background:#f6f9fc;border:1px solid #ccd;padding:6px 10px;margin:8px 0}"
    "#rows.blind .verdict{visibility:hidden}"
)


def _data(summary: EvaluationSummary, items: list[ItemView]) -> str:
    data = {
        "run": summary.run, "rubric": summary.rubric, "criteria": summary.criteria, "scales": summary.scales,
        "models": [m.model_id for m in summary.models],
        "kept": len(items), "total": summary.items_total or len(items),  # a random order is of the rows kept
        # Of several answers per prompt, the first is the one labelled.
        "answers": {item.id: {a.model_id: a.answer for a in item.answers if a.sample == 0} for item in items},
    }
    return script_json(data)


# Inside <script> the HTML parser ends the element at "</script", and "<!--" then "<script" open a state in which
# it ends later, past the data, swallowing what follows. Outside strings JSON has none of < > &: as unicode escapes
# inside them they are the same JSON strings, and the parser never sees a tag.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def script_json(data: object) -> str:
    """`data` as JSON that can stand inside a <script> element, whatever its strings hold."""
    return json.dumps(data, ensure_ascii=False).translate(_SCRIPT_SAFE)


def _legend(summary: EvaluationSummary) -> str:
    scales = "".join(
        f"<div><b>{html.escape(name)}</b>: "
        + "; ".join(f"<b>{level}</b> {html.escape(meaning)}" for level, meaning in summary.scales[name].items())
        + "</div>" for name in summary.criteria)
    pairs = " a, b or t: the better answer of a pair (A, B or tie);" if len(summary.models) > 1 else ""
    return (f"<div class='label-legend'><b>Label rows</b> (kept in this browser for run {html.escape(summary.run or '?')}):"
            f" the highlighted row takes your keys: a digit scores the outlined criterion;{pairs} j / k: next / previous"
            " row; u: undo. Or click the buttons. &middot; <button type='button' id='label-next'>Label next</button>"
            " <button type='button' id='label-random'>Label at random</button>"
            " <button type='button' id='label-unsure'>Least sure first</button>"
            " <button type='button' id='download-labels'>Download labels</button>"
            " <label><input type='checkbox' id='label-blind'> hide the judge's verdicts (label blind)</label>"
            " <span id='label-count'></span>"
            f" <span id='label-status'></span><div id='label-order'></div>{scales}</div>")


def labelling_html(summary: EvaluationSummary, items: list[ItemView]) -> tuple[str, str]:
    """The labelling controls (above the table) and its data and script (after it); for a summary made before
    summaries held the rubric's scales, a note instead."""
    if not summary.scales:
        return "<p>Labelling needs a summary that holds the rubric's scales: rescore this run to label its rows.</p>", ""
    script = resources.files("llm_engineering.evaluation.report").joinpath("labelling.js").read_text(encoding="utf-8")
    return (f"<style>{STYLE}</style>{_legend(summary)}",
            f"<script type='application/json' id='label-data'>{_data(summary, items)}</script><script>{script}</script>")
