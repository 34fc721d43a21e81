"""The page's fixed parts: its style and its script (plain JS, no library: the page works offline from
file://). The script reads the embedded data (`#data`), draws the index and the chosen episode, and
keeps the filters in the URL's hash (`#concluded=yes&phase=input&ep=ID`), so a link, or a headless
browser's --dump-dom, opens the page filtered."""

STYLE = """
body{font:13px/1.4 system-ui,sans-serif;margin:0;color:#111;background:#fafafa}
header{padding:10px 16px;background:#1e293b;color:#f8fafc}
header h1{font-size:17px;margin:0 0 2px}
header p{margin:0;color:#cbd5e1;font-size:12px}
section,form{padding:6px 16px}
.charts{display:flex;flex-wrap:wrap;gap:8px}
.chart{background:#fff;border:1px solid #e2e8f0}
.chart .ct{font-size:11px;font-weight:600}
.chart .ax{font-size:9px;fill:#475569}
.chart .axis{stroke:#94a3b8}
h2{font-size:14px;margin:8px 0 4px}
#filters{display:flex;flex-wrap:wrap;gap:10px;align-items:center;background:#eef2f7;border-bottom:1px solid #cbd5e1}
#filters label{font-size:12px}
#filters input{width:4em}
#main{display:flex;gap:12px;padding:0 16px 16px;align-items:flex-start}
#index{flex:0 0 auto;max-height:88vh;overflow:auto;background:#fff;border:1px solid #e2e8f0}
#index table{border-collapse:collapse;font-size:12px}
#index td,#index th{padding:2px 6px;border-bottom:1px solid #f1f5f9;text-align:left;white-space:nowrap}
#index th{position:sticky;top:0;background:#f8fafc}
#index tr.ep{cursor:pointer}
#index tr.ep:hover{background:#eff6ff}
#index tr.sel{background:#dbeafe}
#index tr.stephead td{background:#f1f5f9;font-weight:600}
#episode{flex:1;min-width:0}
.pair{display:flex;gap:10px}
.pair>.col{flex:1;min-width:0}
.ephead{background:#fff;border:1px solid #e2e8f0;padding:6px 8px;margin-bottom:6px}
.ephead b{font-size:14px}
.flag{display:inline-block;padding:0 5px;border-radius:3px;background:#e2e8f0;margin-right:4px;font-size:11px}
.flag.bad{background:#fee2e2;color:#991b1b}
.flag.good{background:#dcfce7;color:#166534}
.cycle{display:grid;grid-template-columns:64px repeat(3,minmax(0,1fr));gap:4px;margin-bottom:4px}
.cno{font-size:11px;color:#64748b;padding-top:4px}
.turn{background:#fff;border:1px solid #e2e8f0;border-top:3px solid #94a3b8;padding:4px 6px;min-width:0}
.turn.reasoning{border-top-color:#6366f1;grid-column:2}
.turn.input{border-top-color:#0891b2;grid-column:3}
.turn.reflect{border-top-color:#d97706;grid-column:4}
.turn.err{background:#fff7ed}
.th{font-size:11px;color:#334155;display:flex;gap:6px;flex-wrap:wrap;align-items:center}
.th .ph{font-weight:700;text-transform:uppercase;font-size:10px}
.th.nums{margin-top:2px;color:#0f172a}
.bar{display:inline-block;width:60px;height:8px;background:#f1f5f9;position:relative;vertical-align:middle}
.bar i{position:absolute;top:0;height:8px}
.bar i.pos{left:30px;background:#16a34a}
.bar i.neg{right:30px;background:#dc2626}
pre,.txt{white-space:pre-wrap;word-break:break-word;font:12px/1.35 ui-monospace,monospace;margin:3px 0}
.turn .txt,.turn pre{max-height:14em;overflow:auto}
.call{background:#f0f9ff;padding:2px 4px}
.call.failed{background:#fef2f2}
.hyp{background:#fffbeb;padding:2px 4px}
.qe{font-size:12px;color:#334155;margin:0 0 6px}
.qe svg{vertical-align:middle;background:#fff;border:1px solid #e2e8f0}
.qe polyline{fill:none}
.qe .ag{stroke:#0891b2;stroke-width:1.5}
.qe .or{stroke:#94a3b8;stroke-dasharray:3 2}
.privileged{background:#fdf4ff;border:2px dashed #a21caf;padding:6px 8px;margin-bottom:8px}
.privileged h3{margin:0 0 4px;font-size:13px;color:#86198f}
.final{background:#fff;border:1px solid #e2e8f0;padding:4px 8px;margin:6px 0}
details summary{cursor:pointer;color:#334155;font-size:12px}
.summary td{padding:1px 8px}
.muted{color:#64748b}
"""

SCRIPT = r"""
(function(){
const D = JSON.parse(document.getElementById('data').textContent);
const sides = D.sides, A = sides[0], compare = sides.length > 1;
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s == null ? '' : s).trim().replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
const num = (v, d) => (v == null || Number.isNaN(v)) ? '–' : Number(v).toFixed(d == null ? 2 : d);
const yn = (v) => v == null ? '–' : (v ? 'yes' : 'no');
let maxAdv = 1e-9;
sides.forEach(s => s.episodes.forEach(e => e.turns.forEach(t => { if (t.adv != null) maxAdv = Math.max(maxAdv, Math.abs(t.adv)); })));
const byId = {};
sides.forEach((s, k) => s.episodes.forEach(e => { byId[k + ':' + e.id] = e; }));
// compare: one row per function both sides played (a training side: its latest kept episode of it)
function latest(side) { const m = {}; side.episodes.forEach(e => { m[e.uid] = e; }); return m; }
const rows = compare ? (() => { const a = latest(sides[0]), b = latest(sides[1]);
  return Object.keys(a).filter(u => u in b).sort().map(u => ({id: u, eps: [a[u], b[u]]})); })()
  : A.episodes.map(e => ({id: e.id, eps: [e]}));

const DEF = {concluded: 'any', premature: 'any', format: 'any', timed_out: 'any', score: '', phase: 'all', ep: ''};
const F = Object.assign({}, DEF);
function readHash() {
  Object.assign(F, DEF);
  const h = new URLSearchParams(location.hash.slice(1));
  Object.keys(F).forEach(k => { if (h.has(k)) F[k] = h.get(k); });
}
function writeHash() {
  const h = new URLSearchParams();
  Object.keys(F).forEach(k => { if (F[k] && F[k] !== 'any' && F[k] !== 'all') h.set(k, F[k]); });
  history.replaceState(null, '', '#' + h.toString());
}
function tri(want, v) { return want === 'any' || (want === 'yes' ? v === true : v === false); }
function phaseErr(e) { return F.phase === 'all' ? e.format_errors > 0 : e.turns.some(t => t.phase === F.phase && !t.ok); }
function scoreOk(e) {
  if (!F.score) return true;
  const [lo, hi] = F.score.split('-').map(Number);
  return e.score != null && e.score >= lo && e.score <= hi;
}
function keep(e) {
  return tri(F.concluded, e.concluded) && tri(F.premature, e.premature) && tri(F.format, phaseErr(e))
    && tri(F.timed_out, e.timed_out) && scoreOk(e);
}

function indexTable() {
  const head = compare
    ? '<tr><th>function</th>' + sides.map(s => '<th>' + esc(s.name) + ': score</th><th>concl.</th><th>fmt err</th>').join('') + '</tr>'
    : '<tr><th>' + (A.kind === 'train' ? 'step' : '#') + '</th><th>function</th><th>return</th><th>score</th><th>concluded</th><th>premature</th><th>fmt err</th><th>timed out</th></tr>';
  let body = '', step = null;
  rows.forEach((r, n) => {
    const e = r.eps[0];
    if (!compare && A.kind === 'train' && e.step !== step) {
      step = e.step;
      body += '<tr class="stephead" data-step="' + step + '"><td colspan="8">step ' + step + '</td></tr>';
    }
    body += '<tr class="ep" data-id="' + esc(r.id) + '" data-step="' + (compare ? '' : (e.step == null ? '' : e.step)) + '">' + (compare
      ? '<td>' + esc(r.id) + '</td>' + r.eps.map(x => '<td class="score">' + num(x.score) + '</td><td>' + yn(x.concluded) + '</td><td>' + x.format_errors + '</td>').join('')
      : '<td>' + (A.kind === 'train' ? e.step : n + 1) + '</td><td>' + esc(e.uid) + '</td><td>' + num(e.ret) + '</td><td class="score">' + num(e.score)
        + '</td><td>' + yn(e.concluded) + '</td><td>' + yn(e.premature) + '</td><td>' + e.format_errors + '</td><td>' + yn(e.timed_out) + '</td>') + '</tr>';
  });
  $('index').innerHTML = '<table><thead>' + head + '</thead><tbody>' + body + '</tbody></table>';
  $('index').querySelectorAll('tr.ep').forEach(tr => tr.addEventListener('click', () => { F.ep = tr.dataset.id; writeHash(); apply(); }));
}

function bar(v) {
  if (v == null) return '<span class="muted">adv –</span>';
  const w = Math.round(30 * Math.min(1, Math.abs(v) / maxAdv));
  return 'adv <span class="bar" title="advantage ' + num(v, 3) + '"><i class="' + (v >= 0 ? 'pos' : 'neg') + '" style="width:' + w + 'px"></i></span> ' + num(v);
}
function turnCell(t) {
  const hidden = F.phase !== 'all' && t.phase !== F.phase ? ' hidden' : '';
  let h = '<div class="turn ' + t.phase + (t.ok ? '' : ' err') + '" data-phase="' + t.phase + '" data-i="' + t.i + '"' + hidden + '>'
    + '<div class="th"><span class="ph">' + t.phase + '</span><span class="muted">#' + t.i
    + (t.ver == null ? '' : ' · adapter v' + t.ver) + '</span>' + (t.ok ? '' : '<span class="flag bad">format error</span>') + '</div>'
    // an eval's turns have no critic, reward or advantage
    + (t.reward == null && t.score == null && t.adv == null ? '' : '<div class="th nums"><span class="critic" title="critic: '
       + esc(t.judged || 'no judgment') + '">score ' + num(t.score) + '</span>'
       + '<span class="reward">reward ' + num(t.reward) + '</span><span>' + bar(t.adv) + '</span></div>');
  if (t.phase === 'input') {
    h += '<div class="txt">' + esc(t.ok ? 'call ' + t.parsed : t.text) + '</div>';
    if (t.call) h += '<div class="txt call' + (t.call.err ? ' failed' : '') + '">→ ' + esc(t.call.err || t.call.out) + '</div>';
  } else if (t.phase === 'reflect') {
    h += '<div class="txt hyp">' + esc(t.ok ? t.parsed || t.hyp : t.text) + '</div>'
      + '<div class="th">decision ' + (t.decision == null ? '–' : (t.decision ? 'YES (stop)' : 'NO (go on)')) + '</div>';
  } else {
    h += '<div class="txt">' + esc(t.ok ? t.parsed || t.text : t.text) + '</div>';
  }
  if (t.ok && t.phase !== 'reasoning') h += '<details><summary>reply</summary><pre>' + esc(t.text) + '</pre></details>';
  return h + '</div>';
}
// query efficiency: the share of the row's mutants killed after each query (solid) beside the oracle (dashed)
function qeHtml(q) {
  if (!q) return '';
  const K = Math.max(q.killed.length, q.oracle_killed.length, 1), W = 120, H = 24;
  const pts = (c) => [0].concat(c).map((v, k) => (k * W / K).toFixed(1) + ',' + (H - v * H).toFixed(1)).join(' ');
  const pc = (v) => Math.round(100 * v) + '%';
  const n = (v) => v == null ? 'not reached' : 'after ' + v + (v === 1 ? ' query' : ' queries');
  return '<div class="qe" title="share of the row\'s mutants killed after each query (solid), and by the oracle greedy over the test inputs (dashed)">'
    + '<svg width="' + W + '" height="' + H + '"><polyline class="or" points="' + pts(q.oracle_killed) + '"/>'
    + '<polyline class="ag" points="' + pts(q.killed) + '"/></svg> mutants killed: '
    + (q.killed.length ? q.killed.map(pc).join(' → ') : 'none (no query)') + ' of ' + q.mutants
    + ' · 90% ' + n(q.queries_to_90) + ' (oracle: ' + n(q.oracle_queries_to_90) + ')</div>';
}
function episodeHtml(e, side) {
  if (!e) return '<p class="muted">not played in ' + esc(side.name) + '</p>';
  let h = '<div class="ephead" data-episode="' + esc(e.id) + '"><b>' + (e.step != null ? 'step ' + e.step + ' · ' : '') + esc(e.uid) + '</b> '
    + '<span class="muted">' + esc(side.name) + '</span><br>'
    + (side.kind === 'train' ? '<span class="flag">return ' + num(e.ret) + '</span><span class="flag">final critic score ' : '<span class="flag">judge score ')
    + num(e.score) + '</span><span class="flag ' + (e.concluded ? 'good' : '') + '">concluded ' + yn(e.concluded) + '</span>'
    + (side.kind === 'train' ? '<span class="flag ' + (e.premature ? 'bad' : '') + '">premature stop ' + yn(e.premature) + '</span>' : '')
    + '<span class="flag ' + (e.format_errors ? 'bad' : '') + '">format errors ' + e.format_errors + '</span>'
    + '<span class="flag ' + (e.timed_out ? 'bad' : '') + '">timed out ' + yn(e.timed_out) + '</span>'
    + '<span class="flag">calls ' + (e.queries == null ? '–' : e.queries) + '</span></div>' + qeHtml(e.qe);
  for (let c = 0; c < e.turns.length; c += 3) {
    h += '<div class="cycle"><div class="cno">cycle ' + (c / 3 + 1) + '</div>' + e.turns.slice(c, c + 3).map(turnCell).join('') + '</div>';
  }
  h += '<div class="final"><b>final description</b> <span class="txt">' + esc(e.description || '(none)') + '</span></div>';
  if (e.prompt) h += '<details><summary>the first turn\'s prompt, as the actor saw it</summary>'
    + e.prompt.map(m => '<pre><b>' + esc(m.role) + '</b>\n' + esc(m.content) + '</pre>').join('') + '</details>';
  return h;
}
function privileged(uid) {
  const f = D.functions[uid];
  return '<aside class="privileged" id="privileged"><h3>Privileged: what the critic sees and the actor never saw</h3>'
    + (f ? '<div><b>gold description</b><div class="txt">' + esc(f.description || '(none)') + '</div></div><details><summary>source</summary><pre>' + esc(f.code) + '</pre></details>'
         : '<p class="muted">not available for this function</p>') + '</aside>';
}
function apply() {
  Object.keys(F).forEach(k => { const el = $('f-' + k); if (el) el.value = F[k]; });
  let shown = 0, first = null;
  const visible = {};
  $('index').querySelectorAll('tr.ep').forEach((tr, n) => {
    const ok = rows[n].eps.some(keep);
    tr.hidden = !ok;
    if (ok) { shown++; if (first == null) first = rows[n].id; visible[tr.dataset.step] = true; }
  });
  $('index').querySelectorAll('tr.stephead').forEach(tr => { tr.hidden = !visible[tr.dataset.step]; });
  $('shown').textContent = shown + ' of ' + rows.length + (compare ? ' functions' : ' episodes') + ' shown';
  const r = rows.find(x => x.id === F.ep) || rows.find(x => x.id === first);
  if (!r) { $('episode').innerHTML = '<p class="muted">no episode passes the filters</p>'; return; }
  $('index').querySelectorAll('tr.ep').forEach((tr, n) => tr.classList.toggle('sel', rows[n] === r));
  const e0 = r.eps[0];
  // the gold first: a reader holds each hypothesis against it
  $('episode').innerHTML = privileged(e0.uid) + (compare
    ? '<div class="pair">' + r.eps.map((e, k) => '<div class="col">' + episodeHtml(e, sides[k]) + '</div>').join('') + '</div>'
    : episodeHtml(e0, A));
}
indexTable();
readHash();
document.querySelectorAll('#filters select, #filters input').forEach(el => el.addEventListener('change', () => {
  F[el.id.slice(2)] = el.value; writeHash(); apply();
}));
window.addEventListener('hashchange', () => { readHash(); apply(); });
apply();
})();
"""
