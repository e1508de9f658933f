// clinigym collect: the live screen, input forwarding, the box editor and review mode.
// Nothing is loaded from anywhere but this loopback server; every call carries the token.
'use strict';
const TOKEN = document.querySelector('meta[name=token]').content;
const $ = id => document.getElementById(id);
const S = window.collect = {state: null, mode: null, screen: [1920, 1080], editing: null, inflight: false,
                            frames: 0, lastPoint: null, errors: []};
const KEYMAP = {Escape: 'Escape', Tab: 'Tab', Backspace: 'BackSpace', Delete: 'Delete', Enter: 'Return',
  ArrowUp: 'Up', ArrowDown: 'Down', ArrowLeft: 'Left', ArrowRight: 'Right', Home: 'Home', End: 'End',
  PageUp: 'Prior', PageDown: 'Next', Insert: 'Insert', ' ': 'space'};

function withToken(path) { return path + (path.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(TOKEN); }

// Counts calls that change the session, before they are sent and after they answer: a state
// fetched meanwhile may predate the change and must not be shown (it would reopen an accepted step).
let changes = 0;
async function api(path, body) {
  const opts = {headers: {'X-Clinigym-Token': TOKEN}};
  const changing = body !== undefined && path !== 'api/check';
  if (body !== undefined) {
    opts.method = 'POST';
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  if (changing) changes++;
  try {
    const r = await fetch(withToken(path), opts);
    const data = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  } finally {
    if (changing) changes++;
  }
}

function status(text, kind) {
  const el = $('status');
  el.textContent = text;
  el.className = kind || '';
  if (kind === 'error') S.errors.push(text);
}

function block(text) { $('stage').classList.add('blocked'); $('stage').dataset.block = text; status(text, 'busy'); }
function unblock() { $('stage').classList.remove('blocked'); }
function canAct() { return S.mode === 'collect' && !S.inflight && !S.editing && S.state && S.state.pending === null && !S.state.ended; }

// -- geometry --------------------------------------------------------------------------------
function scale() { return $('stage').getBoundingClientRect().width / S.screen[0]; }
function toScreen(ev) {
  const r = $('stage').getBoundingClientRect();
  const x = Math.round((ev.clientX - r.left) * S.screen[0] / r.width);
  const y = Math.round((ev.clientY - r.top) * S.screen[1] / r.height);
  return [Math.max(0, Math.min(S.screen[0] - 1, x)), Math.max(0, Math.min(S.screen[1] - 1, y))];
}
function place(el, b) {
  const k = scale();
  el.style.left = (b[0] * k) + 'px'; el.style.top = (b[1] * k) + 'px';
  el.style.width = ((b[2] - b[0]) * k) + 'px'; el.style.height = ((b[3] - b[1]) * k) + 'px';
}
function mark(el, p) {
  if (!p) { el.classList.remove('show'); return; }
  const k = scale();
  el.style.left = (p[0] * k) + 'px'; el.style.top = (p[1] * k) + 'px';
  el.classList.add('show');
}
const round1 = v => Math.round(v * 10) / 10;

// -- live screen -----------------------------------------------------------------------------
function nextFrame() { if (S.mode === 'collect') $('live').src = withToken('api/screen.jpg?n=' + (++S.frames)); }
$('live').addEventListener('load', () => { S.liveLoaded = true; setTimeout(nextFrame, 250); });
$('live').addEventListener('error', () => setTimeout(nextFrame, 1000));

// -- input forwarding ------------------------------------------------------------------------
let down = null, clickTimer = null, clickAt = null, wheel = null, typed = '', typeTimer = null;

$('live').addEventListener('mousedown', ev => {
  if (ev.button !== 0 || !canAct()) return;
  ev.preventDefault();
  down = toScreen(ev);
});
window.addEventListener('mouseup', ev => {
  if (!down || ev.button !== 0) return;
  const start = down, end = toScreen(ev);
  down = null;
  if (Math.hypot(end[0] - start[0], end[1] - start[1]) > 6) {
    clearTimeout(clickTimer); clickTimer = null;
    send({type: 'drag', x: start[0], y: start[1], x2: end[0], y2: end[1]});
  } else if (clickTimer && Math.hypot(start[0] - clickAt[0], start[1] - clickAt[1]) <= 6) {
    clearTimeout(clickTimer); clickTimer = null;
    send({type: 'double_click', x: clickAt[0], y: clickAt[1]});
  } else {
    clickAt = start;
    clickTimer = setTimeout(() => { clickTimer = null; send({type: 'click', x: start[0], y: start[1]}); }, 350);
  }
});
$('live').addEventListener('contextmenu', ev => {
  ev.preventDefault();
  if (!canAct()) return;
  const p = toScreen(ev);
  send({type: 'right_click', x: p[0], y: p[1]});
});
$('live').addEventListener('wheel', ev => {
  ev.preventDefault();
  if (!canAct()) return;
  const p = toScreen(ev);
  if (!wheel) wheel = {x: p[0], y: p[1], dx: 0, dy: 0};
  wheel.dy += Math.sign(ev.deltaY); wheel.dx += Math.sign(ev.deltaX);
  clearTimeout(wheel.timer);
  wheel.timer = setTimeout(() => {
    const w = wheel; wheel = null;
    if (w.dx || w.dy) send({type: 'scroll', x: w.x, y: w.y, dx: w.dx, dy: w.dy});
  }, 300);
}, {passive: false});

function armType() {
  clearTimeout(typeTimer);
  status('typing: ' + JSON.stringify(typed), 'busy');
  typeTimer = setTimeout(flushType, 1200);
}
function flushType() {
  clearTimeout(typeTimer);
  if (!typed) return;
  const text = typed; typed = '';
  const a = {type: 'type', text};
  if (S.lastPoint) { a.x = S.lastPoint[0]; a.y = S.lastPoint[1]; }
  send(a);
}
document.addEventListener('keydown', ev => {
  if (S.mode !== 'collect' || S.editing || ev.target.matches('input, textarea')) return;
  if (!canAct() && !typed) return;
  const mods = (ev.ctrlKey ? 'ctrl+' : '') + (ev.altKey ? 'alt+' : '') + (ev.metaKey ? 'super+' : '');
  if (['Shift', 'Control', 'Alt', 'Meta'].includes(ev.key)) return;
  ev.preventDefault();
  if (!mods && ev.key.length === 1) { typed += ev.key; armType(); return; }
  if (!mods && ev.key === 'Enter' && typed) { typed += '\n'; flushType(); return; }
  if (!mods && ev.key === 'Backspace' && typed) { typed = typed.slice(0, -1); armType(); return; }
  flushType();
  const shift = ev.shiftKey && ev.key.length > 1 ? 'shift+' : '';
  const name = KEYMAP[ev.key] || (ev.key.length === 1 ? ev.key.toLowerCase() : ev.key);
  setTimeout(() => send({type: 'key', keys: mods + shift + name}), 0);
});

async function send(action) {
  if (S.inflight) return;
  S.inflight = true;
  block('forwarding ' + action.type + '…');
  try {
    const step = await api('api/action', action);
    if (action.x !== undefined && action.type !== 'type') S.lastPoint = [action.x, action.y];
    await refresh();
    openStep(step.index);
    status(`step ${step.index + 1}: check the box and the instruction, then accept`);
  } catch (e) {
    status(e.message, 'error');
  } finally {
    S.inflight = false;
    unblock();
  }
}

// -- box editor ------------------------------------------------------------------------------
let drag = null, activeHandle = 'move';
function moveBox(box, h, dx, dy) {
  let [x1, y1, x2, y2] = box;
  if (h === 'move') { x1 += dx; x2 += dx; y1 += dy; y2 += dy; } else {
    if (h.includes('w')) x1 += dx;
    if (h.includes('e')) x2 += dx;
    if (h.includes('n')) y1 += dy;
    if (h.includes('s')) y2 += dy;
  }
  const [W, H] = S.screen;
  x1 = Math.max(0, Math.min(W - 2, Math.round(x1))); y1 = Math.max(0, Math.min(H - 2, Math.round(y1)));
  x2 = Math.max(x1 + 1, Math.min(W, Math.round(x2))); y2 = Math.max(y1 + 1, Math.min(H, Math.round(y2)));
  return [x1, y1, x2, y2];
}
function drawBox() {
  const e = S.editing;
  if (!e || !e.box) { $('box').classList.remove('show'); return; }
  place($('box'), e.box);
  $('box').classList.add('show');
  $('box').dataset.box = JSON.stringify(e.box.map(round1));
  const w = Math.round(e.box[2] - e.box[0]), h = Math.round(e.box[3] - e.box[1]);
  $('box-text').textContent = `box [${e.box.map(Math.round).join(', ')}]  ${w}×${h} px`;
}
$('box').addEventListener('mousedown', ev => {
  if (!S.editing || !S.editing.editable) return;
  ev.preventDefault(); ev.stopPropagation();
  drag = {h: ev.target.dataset.h || 'move', x: ev.clientX, y: ev.clientY, box: S.editing.box.slice()};
  activeHandle = drag.h;
});
// Arrow keys nudge the last grabbed handle (or the whole box) by 1 px, with Shift by 10.
document.addEventListener('keydown', ev => {
  if (!S.editing || !S.editing.editable || !S.editing.box || ev.target.matches('input, textarea')) return;
  const step = ev.shiftKey ? 10 : 1;
  const d = {ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step]}[ev.key];
  if (!d) return;
  ev.preventDefault();
  S.editing.box = moveBox(S.editing.box, activeHandle, d[0], d[1]);
  drawBox();
  if (S.mode === 'collect') checkFlags();
});
window.addEventListener('mousemove', ev => {
  if (!drag) return;
  const k = scale();
  S.editing.box = moveBox(drag.box, drag.h, (ev.clientX - drag.x) / k, (ev.clientY - drag.y) / k);
  drawBox();
});
window.addEventListener('mouseup', () => { if (drag) { drag = null; if (S.mode === 'collect') checkFlags(); } });

function showFlags(reasons) {
  $('flags').innerHTML = '';
  for (const r of reasons || []) {
    const li = document.createElement('li');
    li.textContent = r;
    li.dataset.flag = r.split(':')[0];
    $('flags').appendChild(li);
  }
}
let checkTimer = null;
function checkFlags() {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(async () => {
    const e = S.editing;
    if (!e || e.review) return;
    try {
      const r = await api('api/check', {step: e.index, box: e.box, instruction: $('instruction').value});
      showFlags(r.flags.map(f => f + ': ' + S.state.flags[f]));
    } catch (err) { status(err.message, 'error'); }
  }, 250);
}
$('instruction').addEventListener('input', () => { if (S.mode === 'collect') checkFlags(); });

function describeAction(a) {
  let s = a.type;
  if (a.point) s += ` at (${a.point.join(', ')})`;
  if (a.end_point) s += ` to (${a.end_point.join(', ')})`;
  if (a.text) s += ' ' + JSON.stringify(a.text);
  if (a.keys) s += ' ' + a.keys;
  if (a.scroll) s += ` by (${a.scroll.join(', ')})`;
  return s;
}

function showStage(mode, image) {
  $('stage').className = mode;
  if (image) $('before').src = withToken(image);
}

function openStep(i) {
  const st = S.state.steps[i];
  S.editing = {index: i, box: st.box.slice(), end_box: st.end_box ? st.end_box.slice() : null, editable: true,
               source: st.proposal.source};
  activeHandle = 'move';
  showStage('review', `api/image/${i}/before.png`);
  $('editor').classList.remove('hidden');
  $('editor-title').textContent = `Step ${i + 1}` + (st.accepted ? '' : ' — awaiting acceptance');
  $('editor-action').textContent = `${describeAction(st.action)}; proposed from ${st.proposal.source}` +
    (st.proposal.selector ? ` (${st.proposal.selector}${st.proposal.text ? ' / ' + st.proposal.text : ''})` : '') +
    `; ${st.changed_pixels} pixels changed`;
  const sources = $('sources');
  sources.innerHTML = '';
  for (const c of st.candidates) {
    const b = document.createElement('button');
    b.textContent = c.source;
    b.dataset.source = c.source;
    b.title = JSON.stringify(c.box);
    if (c.source === st.proposal.source) b.classList.add('on');
    b.onclick = () => {
      S.editing.box = c.box.slice();
      for (const o of sources.children) o.classList.toggle('on', o === b);
      drawBox(); checkFlags();
    };
    sources.appendChild(b);
  }
  $('instruction').value = st.instruction !== null && st.instruction !== undefined ? st.instruction : st.suggestion;
  $('force').classList.add('hidden');
  $('cancel-edit').classList.toggle('hidden', !st.accepted);
  showFlags([]);
  $('truth').classList.remove('show');
  drawBox();
  mark($('point-mark'), st.action.point);
  mark($('end-mark'), st.action.end_point);
  renderSteps();
  checkFlags();
}

function closeEditor() {
  S.editing = null;
  $('editor').classList.add('hidden');
  $('box').classList.remove('show');
  mark($('point-mark'), null); mark($('end-mark'), null);
  showStage(S.mode === 'collect' ? 'live' : 'review');
  renderSteps();
}

async function accept(force) {
  const e = S.editing;
  if (!e) return;
  try {
    const r = await api('api/accept', {step: e.index, box: e.box, end_box: e.end_box,
                                       instruction: $('instruction').value, force});
    if (!r.accepted) {
      showFlags(r.reasons);
      $('force').classList.remove('hidden');
      status('quality flags: fix the step or save it anyway', 'error');
      return;
    }
    closeEditor();
    await refresh();
  } catch (err) { status(err.message, 'error'); }
}
$('accept').onclick = () => accept(false);
$('force').onclick = () => accept(true);
$('cancel-edit').onclick = closeEditor;

// -- steps, undo, end ------------------------------------------------------------------------
function renderSteps() {
  if (!S.state || S.mode !== 'collect') return;
  const ol = $('steps');
  ol.innerHTML = '';
  for (const st of S.state.steps) {
    const li = document.createElement('li');
    li.className = (st.accepted ? '' : 'pending') + (S.editing && S.editing.index === st.index ? ' sel' : '');
    li.textContent = `${st.action.type}: ${st.instruction || st.suggestion || '(no instruction)'} `;
    const src = document.createElement('span');
    src.className = 'src';
    src.textContent = `[${st.proposal.source}] `;
    li.appendChild(src);
    if (st.flags.length) {
      const f = document.createElement('span');
      f.className = 'f';
      f.textContent = st.flags.join(', ');
      li.appendChild(f);
    }
    li.onclick = () => { if (!S.inflight) openStep(st.index); };
    ol.appendChild(li);
  }
  $('new-task').classList.toggle('hidden', !S.state.ended);
}

async function busyCall(text, path, body) {
  if (S.inflight) return null;
  S.inflight = true;
  block(text);
  try {
    return await api(path, body);
  } catch (e) {
    status(e.message, 'error');
    return null;
  } finally {
    S.inflight = false;
    unblock();
    await refresh();
  }
}
$('undo').onclick = async () => {
  closeEditor();
  const r = await busyCall('undo: resetting the program and replaying the kept steps…', 'api/undo', {});
  if (r) status(`step ${r.undone + 1} undone; ${r.steps} steps kept`);
};
$('end').onclick = async () => {
  const r = await busyCall('writing the scenario and replaying it with the oracle…', 'api/end',
                           {overview: $('overview').value, goal: $('goal').value,
                            scenario_id: $('scenario-id').value || null});
  if (!r) return;
  const shown = Object.assign({}, r);
  delete shown.scenario_yaml;
  const res = $('result');
  res.dataset.status = r.status;
  res.textContent = JSON.stringify(shown, null, 2) + '\n\n' + r.scenario_yaml;
  const ok = r.status === 'complete' && r.tca === 1;
  const derived = !r.derived ? '' : r.derived.written ? `; ${r.derived.check.length} checks derived`
    : `; no checks derived: ${r.derived.problems.join('; ')}`;
  status(`replay ${r.status}, TCA ${r.tca === null ? '-' : (100 * r.tca).toFixed(1) + '%'}${derived}: ${r.scenario}`,
         ok ? '' : 'error');
};
$('new-task').onclick = async () => {
  $('result').textContent = '';
  await busyCall('new task: resetting the program…', 'api/new', {overview: $('overview').value});
};

// -- review mode -----------------------------------------------------------------------------
function openReview(t) {
  const steps = S.state.steps;
  t = Math.max(0, Math.min(steps.length - 1, t));
  const st = steps[t];
  const fix = st.correction;
  S.editing = {index: t, review: true, editable: false,
               box: fix ? fix.box.slice() : (st.target_box ? st.target_box.slice() : null)};
  showStage('review', `api/image/${t}/before.png`);
  $('editor').classList.remove('hidden');
  $('editor-title').textContent = `Step ${t + 1} of ${steps.length}: ${st.instruction}`;
  $('editor-action').textContent = `${st.action && st.action.type ? describeAction(st.action) : 'no action'}` +
    ` — ${st.correct ? 'correct' : 'wrong'}${st.failure ? ' (' + st.failure + ')' : ''}` +
    (fix ? ' — ground truth corrected' : '');
  $('instruction').value = fix ? fix.note : '';
  $('instruction').placeholder = 'note on the correction';
  if (st.target_box) { place($('truth'), st.target_box); $('truth').classList.add('show'); } else $('truth').classList.remove('show');
  if (fix) drawBox(); else $('box').classList.remove('show');
  mark($('point-mark'), st.point);
  mark($('end-mark'), null);
  $('save-fix').classList.add('hidden');
  $('unmark').classList.toggle('hidden', !fix);
  for (const li of $('review-steps').children) li.classList.toggle('sel', Number(li.dataset.t) === t);
}
$('prev').onclick = () => openReview(S.editing ? S.editing.index - 1 : 0);
$('next').onclick = () => openReview(S.editing ? S.editing.index + 1 : 0);
$('mark-wrong').onclick = () => {
  const e = S.editing;
  const st = S.state.steps[e.index];
  e.editable = true;
  activeHandle = 'move';
  if (!e.box) { const p = st.point || [S.screen[0] / 2, S.screen[1] / 2]; e.box = [p[0] - 20, p[1] - 20, p[0] + 20, p[1] + 20]; }
  drawBox();
  $('save-fix').classList.remove('hidden');
  status('drag the box corners/edges to the true target, then save the correction');
};
$('save-fix').onclick = async () => {
  const e = S.editing;
  try {
    const r = await api('api/correct', {t: e.index, box: e.box, wrong: true, note: $('instruction').value});
    status(`saved ${r.saved} (${r.corrections} corrected)`);
    await refresh();
    openReview(e.index);
  } catch (err) { status(err.message, 'error'); }
};
$('unmark').onclick = async () => {
  const e = S.editing;
  try {
    const r = await api('api/correct', {t: e.index, wrong: false});
    status(`saved ${r.saved} (${r.corrections} corrected)`);
    await refresh();
    openReview(e.index);
  } catch (err) { status(err.message, 'error'); }
};
function renderReview() {
  const st = S.state;
  $('episode').textContent = `${st.scenario} — agent ${st.agent} — ${st.outcome ? st.outcome.status : 'unfinished'}; ` +
    `corrections are saved to ${st.out}`;
  const ol = $('review-steps');
  ol.innerHTML = '';
  for (const [t, s] of st.steps.entries()) {
    const li = document.createElement('li');
    li.dataset.t = t;
    li.textContent = `${s.instruction} — ${s.correct ? 'correct' : (s.failure || 'wrong')}` + (s.correction ? ' [corrected]' : '');
    li.onclick = () => openReview(t);
    ol.appendChild(li);
  }
}

// -- state -----------------------------------------------------------------------------------
async function refresh() {
  const before = changes;
  let st;
  try {
    st = await api('api/state');
  } catch (e) { status(e.message, 'error'); return; }
  if (changes !== before) return;   // stale: the change's own refresh follows
  S.state = st;
  S.screen = st.screen;
  if (S.mode === null) {
    S.mode = st.mode;
    for (const el of document.querySelectorAll('.collect-only')) el.classList.toggle('hidden', st.mode !== 'collect');
    for (const el of document.querySelectorAll('.review-only')) el.classList.toggle('hidden', st.mode !== 'review');
    if (st.mode === 'collect') {
      $('title').textContent = `clinigym collect — ${st.title}`;
      $('overview').value = st.overview || '';
      $('scenario-id').value = st.scenario_id || '';
      $('goal').value = st.goal || '';
      nextFrame();
    } else {
      $('title').textContent = 'clinigym review';
      $('overview').value = st.overview || '';
      $('overview').readOnly = true;
      $('scenario-id').closest('label').classList.add('hidden');
      $('accept').classList.add('hidden');
      document.querySelector('label[for=instruction]').textContent = 'Note on the correction';
      renderReview();
      openReview(0);
    }
  }
  if (st.mode === 'collect') {
    renderSteps();
    if (!S.editing && st.pending !== null && !S.inflight) openStep(st.pending);
    if (!S.inflight) {
      if (st.busy) status(st.busy + '…', 'busy');
      else if ($('status').className !== 'error') status(st.ended ? 'task saved: start a new task' :
        st.pending !== null ? `step ${st.pending + 1} awaits acceptance` : `ready: ${st.steps.length} steps; act on the screen`);
    }
  } else {
    renderReview();
    if (!S.editing || !S.editing.editable) status('review: step through the frames; fix a wrong ground truth');
  }
}
window.addEventListener('resize', () => {
  if (S.editing) { drawBox(); const st = S.state.steps[S.editing.index];
    if (S.editing.review) { if (st.target_box) place($('truth'), st.target_box); mark($('point-mark'), st.point); }
    else { mark($('point-mark'), st.action.point); mark($('end-mark'), st.action.end_point); } }
});
refresh();
setInterval(() => { if (!S.inflight && !drag) refresh(); }, 2000);
