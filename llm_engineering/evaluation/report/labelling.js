// Labelling in the report's row browser: a person scores answers (digits) and picks the better answer of a pair
// (a, b, t), moves with j/k, undoes with u; labels are kept in the browser's storage under the run and rubric, and
// "Download labels" writes them in the format `--labels` reads. No server, no network: works from file://.
(function () {
  const data = JSON.parse(document.getElementById('label-data').textContent);
  const table = document.getElementById('rows'), body = table.tBodies[0];
  const count = document.getElementById('label-count'), status = document.getElementById('label-status');
  const storeKey = 'llm-eval-labels:' + data.run + ':' + data.rubric;
  let state = {labels: {}, history: []}, kept = true;
  try {
    state = JSON.parse(window.localStorage.getItem(storeKey)) || state;
  } catch (error) {
    kept = false;
  }
  const storageNote = () => {
    if (!kept) status.textContent = 'This view cannot keep labels (no browser storage): download them before you close it.';
  };
  storageNote();

  function save() {
    if (!kept) return;
    try { window.localStorage.setItem(storeKey, JSON.stringify(state)); } catch (error) { kept = false; storageNote(); }
  }

  // Targets: what one key press labels. Per row, each model's criteria in order, then each pair.
  const rowTargets = new Map(), byKey = new Map();
  function button(text, title, onClick) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = text;
    b.title = title;
    b.addEventListener('click', onClick);
    return b;
  }
  function addTarget(row, target, holder, choices) {
    target.row = row;
    target.buttons = new Map();
    target.holder = holder;
    choices.forEach(([value, text, title]) => {
      const b = button(text, title, () => { current = row; cursor = rowTargets.get(row).indexOf(target); choose(target, value); });
      target.buttons.set(value, b);
      holder.appendChild(b);
    });
    rowTargets.get(row).push(target);
    byKey.set(target.key, target);
  }
  for (const row of body.rows) {
    const id = row.dataset.id, answers = data.answers[id] || {};
    rowTargets.set(row, []);
    row.querySelectorAll('td[data-failed]').forEach(cell => {
      const model = cell.dataset.model;
      if (!(model in answers)) return;
      data.criteria.forEach(criterion => {
        const holder = document.createElement('div');
        holder.className = 'label-set';
        holder.appendChild(document.createTextNode('your ' + criterion + ': '));
        const levels = Object.keys(data.scales[criterion]).map(Number);
        addTarget(row, {kind: 'score', key: JSON.stringify(['score', id, model, criterion]), id, model, criterion, levels},
                  holder, levels.map(level => [level, String(level), level + ': ' + data.scales[criterion][level]]));
        cell.appendChild(holder);
      });
    });
    if (data.models.length > 1) {
      const cell = row.insertCell();
      const first = data.models[0];
      data.models.slice(1).filter(other => first in answers && other in answers).forEach(other => {
        const holder = document.createElement('div');
        holder.className = 'label-set';
        holder.appendChild(document.createTextNode(first + ' (A) vs ' + other + ' (B): '));
        addTarget(row, {kind: 'pair', key: JSON.stringify(['pair', id, first, other]), id, a: first, b: other}, holder,
                  [['A', 'A', 'A is better (a)'], ['B', 'B', 'B is better (b)'], ['tie', 'tie', 'as good as each other (t)']]);
        cell.appendChild(holder);
      });
    }
  }
  if (data.models.length > 1) {
    const th = document.createElement('th');
    th.textContent = 'your choice: the better answer';
    table.tHead.rows[0].appendChild(th);
  }

  let current = null, cursor = 0;
  // How the rows in view were ordered, recorded with each label: the corrected means' intervals hold for labels of
  // rows taken in the random order; a sort by a column, or 'Label next', makes the choice of rows no longer random.
  let orderedBy = 'by-hand';
  table.tHead.addEventListener('click', () => { orderedBy = 'by-hand'; });
  const visible = target => !target.holder.closest('td').hidden;
  const labelled = row => rowTargets.get(row).some(t => t.key in state.labels);

  function paint() {
    for (const [row, targets] of rowTargets) {
      targets.forEach((t, i) => {
        t.buttons.forEach((b, value) => b.classList.toggle('on', state.labels[t.key] === value));
        t.holder.classList.toggle('target', row === current && i === cursor);
      });
      row.classList.toggle('labelled', labelled(row));
      row.classList.toggle('current', row === current);
    }
    const rows = [...rowTargets.keys()].filter(labelled).length;
    count.textContent = rows + ' of ' + body.rows.length + ' rows labelled (' + Object.keys(state.labels).length + ' labels)';
  }

  function moveTo(row, options) {
    if (!row) return;
    current = row;
    const targets = rowTargets.get(row);
    const open = targets.findIndex(t => visible(t) && !(t.key in state.labels));
    cursor = open >= 0 ? open : Math.max(0, targets.findIndex(visible));
    row.focus({preventScroll: true});
    if (!(options && options.quiet)) row.scrollIntoView({block: 'nearest'});
    paint();
  }
  function step(direction) {
    const rows = [...body.rows].filter(r => !r.hidden);
    const at = rows.indexOf(current);
    moveTo(rows[at < 0 ? 0 : Math.min(rows.length - 1, Math.max(0, at + direction))]);
  }
  function advance() {
    const targets = rowTargets.get(current);
    const next = targets.findIndex((t, i) => i > cursor && visible(t));
    if (next >= 0) { cursor = next; paint(); } else { step(1); }
  }
  function choose(target, value) {
    const previous = target.key in state.labels ? state.labels[target.key] : null;
    if (previous !== value) {
      state.history.push([target.key, previous]);
      state.history = state.history.slice(-1000);
      state.labels[target.key] = value;
      state.chosen = state.chosen || {};
      state.chosen[target.key] = orderedBy;
      save();
    }
    advance();
  }
  function undo() {
    const last = state.history.pop();
    if (!last) return;
    const [key, previous] = last;
    if (previous === null) delete state.labels[key]; else state.labels[key] = previous;
    save();
    const target = byKey.get(key);
    if (target) { moveTo(target.row); cursor = rowTargets.get(target.row).indexOf(target); }
    paint();
  }

  const PAIR_KEYS = {a: 'A', b: 'B', t: 'tie'};
  document.addEventListener('keydown', event => {
    if (event.ctrlKey || event.metaKey || event.altKey || !current) return;
    if (event.target.closest && event.target.closest('input, select, textarea')) return;
    const target = rowTargets.get(current)[cursor];
    if (/^[0-9]$/.test(event.key) && target && target.kind === 'score' && target.levels.includes(Number(event.key))) {
      choose(target, Number(event.key));
    } else if (event.key in PAIR_KEYS && rowTargets.get(current).some(t => t.kind === 'pair' && visible(t))) {
      const pair = target && target.kind === 'pair' ? target : rowTargets.get(current).find(t => t.kind === 'pair' && visible(t));
      cursor = rowTargets.get(current).indexOf(pair);
      choose(pair, PAIR_KEYS[event.key]);
    } else if (event.key === 'j' || event.key === 'k') {
      step(event.key === 'j' ? 1 : -1);
    } else if (event.key === 'u') {
      undo();
    } else {
      return;
    }
    event.preventDefault();
  });
  body.addEventListener('focusin', event => {
    const row = event.target.closest('tr');
    if (row && row !== current && event.target === row) moveTo(row, {quiet: true});
  });

  // Label next: unlabelled rows first, taking the judge's worst total scores in turn, so labels cover the scale.
  document.getElementById('label-next').addEventListener('click', () => {
    orderedBy = 'label-next';
    const rows = [...body.rows], open = rows.filter(r => !labelled(r)), buckets = new Map();
    open.forEach(r => {
      const score = r.cells[1].dataset.value;
      if (!buckets.has(score)) buckets.set(score, []);
      buckets.get(score).push(r);
    });
    const lists = [...buckets.keys()].sort((x, y) => parseFloat(x) - parseFloat(y)).map(k => buckets.get(k));
    const order = [];
    for (let i = 0; order.length < open.length; i++) lists.forEach(list => { if (i < list.length) order.push(list[i]); });
    [...order, ...rows.filter(labelled)].forEach(r => body.appendChild(r));
    table.querySelectorAll('th[data-dir]').forEach(h => { delete h.dataset.dir; });
    document.getElementById('label-order').textContent = 'Order: label next: the ' + open.length +
      ' unlabelled rows, taking the worst total scores ' + [...buckets.keys()].sort((x, y) => x - y).join(', ') +
      ' in turn so that labels cover the judge\'s scale; labelled rows last. Not a random sample: for the ' +
      'corrected means (PPI++) label at random instead.';
    moveTo(order[0] || rows[0]);
  });

  // Label at random: the unlabelled rows in a random order. The corrected means (PPI++) of a rescore with these
  // labels hold only for labels of a random sample of the rows: label from the top, skip none.
  document.getElementById('label-random').addEventListener('click', () => {
    orderedBy = 'random';
    const rows = [...body.rows], open = rows.filter(r => !labelled(r));
    for (let i = open.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [open[i], open[j]] = [open[j], open[i]];
    }
    [...open, ...rows.filter(labelled)].forEach(r => body.appendChild(r));
    table.querySelectorAll('th[data-dir]').forEach(h => { delete h.dataset.dir; });
    document.getElementById('label-order').textContent = 'Order: at random: the ' + open.length +
      ' unlabelled rows shuffled; labelled rows last. Label from the top and skip none: the corrected means ' +
      '(PPI++) hold for labels of a random sample of the rows' + (data.kept < data.total ? ', and this report ' +
      'keeps only the ' + data.kept + ' worst of ' + data.total + ' items, so its rows are not one' : '') + '.';
    moveTo(open[0] || rows[0]);
  });

  // Least sure first: the unlabelled rows whose least sure verdict has the lowest confidence first (the rows
  // escalation would hand on), rows without a confidence last. Not a random sample either.
  document.getElementById('label-unsure').addEventListener('click', () => {
    orderedBy = 'least-sure';
    const rows = [...body.rows], open = rows.filter(r => !labelled(r));
    const sure = r => ('confidence' in r.dataset ? parseFloat(r.dataset.confidence) : Infinity);
    const order = open.map((r, i) => [r, i]).sort((x, y) => sure(x[0]) - sure(y[0]) || x[1] - y[1]).map(([r]) => r);
    [...order, ...rows.filter(labelled)].forEach(r => body.appendChild(r));
    table.querySelectorAll('th[data-dir]').forEach(h => { delete h.dataset.dir; });
    const known = open.filter(r => 'confidence' in r.dataset).length;
    document.getElementById('label-order').textContent = 'Order: least sure first: the ' + known + ' unlabelled rows ' +
      'with a confidence, the judge\'s least sure verdicts first' + (known < open.length ? ', then ' + (open.length -
      known) + ' without one (a judge without logprobs, or a jury)' : '') + '; labelled rows last. Not a random ' +
      'sample: for the corrected means (PPI++) label at random instead.';
    moveTo(order[0] || rows[0]);
  });

  function download(name, lines) {
    const link = document.createElement('a');
    link.href = URL.createObjectURL(new Blob([lines.map(l => JSON.stringify(l) + '\n').join('')], {type: 'application/jsonl'}));
    link.download = name;
    document.body.appendChild(link);
    link.click();
    link.remove();
  }
  const chosen = key => (state.chosen || {})[key] || 'by-hand';
  document.getElementById('download-labels').addEventListener('click', () => {
    const scores = new Map(), pairs = [];  // scores: one label per (id, answer, criterion), as `--labels` asks
    for (const [key, value] of Object.entries(state.labels)) {
      const [kind, id, first, second] = JSON.parse(key), answers = data.answers[id];
      if (!answers) continue;
      if (kind === 'score') {
        const label = {id, answer: answers[first], criterion: second, score: value, run: data.run, rubric: data.rubric,
                       chosen: chosen(key)};
        const same = JSON.stringify([id, label.answer, second]);
        if (!scores.has(same)) scores.set(same, label);
      } else {
        pairs.push({id, answer_a: answers[first], answer_b: answers[second], preferred: value, run: data.run,
                    rubric: data.rubric, chosen: chosen(key)});
      }
    }
    const pointwise = [...scores.values()];
    if (!pointwise.length && !pairs.length) { status.textContent = 'No labels yet: label a row first.'; return; }
    const stem = (data.run || 'run').replace(/[^A-Za-z0-9._-]+/g, '_');
    if (pointwise.length) download('labels-' + stem + '.jsonl', pointwise);
    if (pairs.length) download('pairwise-labels-' + stem + '.jsonl', pairs);
    status.textContent = 'Downloaded ' + [pointwise.length ? pointwise.length + ' scores' : '', pairs.length ? pairs.length +
      ' pair choices' : ''].filter(Boolean).join(' and ') + ': python tools/run.py rescore --labels FILE';
  });

  const blind = document.getElementById('label-blind');
  blind.addEventListener('change', () => { table.classList.toggle('blind', blind.checked); if (current) current.focus({preventScroll: true}); });

  moveTo([...body.rows].find(r => !r.hidden), {quiet: true});
})();
