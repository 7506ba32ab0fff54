// Minimal status page: the attention-first panel (SPEC §9) builds on the same /api/ routes.
const $ = (id) => document.getElementById(id);

function row(list, name, value) {
  const dt = document.createElement('dt');
  dt.textContent = name;
  const dd = document.createElement('dd');
  dd.textContent = value;
  list.append(dt, dd);
}

async function refresh() {
  try {
    const res = await fetch('/api/status');
    const s = await res.json();
    const list = $('status-list');
    list.replaceChildren();
    row(list, 'mode', s.mode);
    row(list, 'policy version', s.policy_version);
    row(list, 'triggers', Object.entries(s.triggers).map(([k, v]) => `${v} ${k}`).join(', ') || 'none yet');
    row(list, 'waiting for an eval', s.eval_queue);
    row(list, 'tickets', Object.entries(s.tickets).map(([k, v]) => `${v} ${k}`).join(', ') || 'none');
    row(list, 'messages pending', s.receipts_pending);
    $('health').textContent = 'running';
  } catch (e) {
    $('health').textContent = 'not reachable';
  }
}

$('explain-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const q = $('explain-q').value.trim();
  const res = await fetch('/api/explain?q=' + encodeURIComponent(q));
  const body = await res.json();
  $('explain-summary').textContent = res.ok ? body.summary : body.error;
  $('explain-story').hidden = !res.ok;
  $('explain-story').textContent = res.ok ? JSON.stringify(body, null, 2) : '';
});

refresh();
setInterval(refresh, 5000);
