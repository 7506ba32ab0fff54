// The remote workers' pool (issue 36), under Status: each worker with its executors, leases used
// of its slots, the Tickets it holds and its last heartbeat; the turns waiting per executor; and
// Revoke, confirmed in a dialog like Stop. Shown only when the daemon has a pool.
// Live like the rest of the page: panel.js calls refreshWorkers() on every change event, and the
// daemon's stream sends one when a worker joins or leaves, takes or ends a turn, or a turn queues.
// Heartbeats alone send nothing: their ages are counted here, from the last read.
// Every name and executor is the worker's own text: shown through textContent only (dom.js).
import { command, getJson } from './api.js';
import { $, el } from './dom.js';

const wk = {
  pool: null,      // the last /api/workers answer
  readAt: 0,       // when it was read (Date.now()), to age the heartbeats between reads
  revoking: null,  // the worker the dialog asks about
};
let hooks = {};

export function initWorkers(h) {
  hooks = h;
  $('revoke-form').addEventListener('submit', confirmRevoke);
  // Heartbeat ages, between reads: one text per row, no request.
  setInterval(() => { if (wk.pool?.enabled) ageHeartbeats(); }, 5_000);
}

export async function refreshWorkers() {
  let pool;
  try {
    pool = await getJson('/api/workers');
  } catch {
    pool = { enabled: false };  // a daemon without the route, or a failed read: nothing to show
  }
  wk.pool = pool;
  wk.readAt = Date.now();
  render();
}

// "12 s ago", "3 min ago": heartbeats come every few seconds, so seconds matter here.
function heartbeatText(seconds) {
  if (seconds < 90) return `${seconds} s ago`;
  const m = Math.round(seconds / 60);
  if (m < 90) return `${m} min ago`;
  return `${Math.round(m / 60)} h ago`;
}

function secondsNow(w) {
  return w.seconds_since_seen + Math.max(0, Math.round((Date.now() - wk.readAt) / 1000));
}

function ageHeartbeats() {
  for (const node of $('workers-list').querySelectorAll('[data-worker]')) {
    const w = wk.pool.workers.find((x) => x.id === node.dataset.worker);
    const cell = node.querySelector('.heartbeat');
    if (w && cell) cell.textContent = `last heartbeat ${heartbeatText(secondsNow(w))}`;
  }
}

// A lease names its Ticket ("ticket-12"): a button that opens it in History.
function leaseNode(lease) {
  const m = /^ticket-(\d{1,15})$/.exec(lease);
  if (!m) return el('span', { class: 'lease', text: lease });
  return el('button', { type: 'button', class: 'ghost small lease', text: `#${m[1]}`, title: `Show Ticket #${m[1]}`,
    onclick: () => hooks.showTicket(Number(m[1])) });
}

function render() {
  const pool = wk.pool;
  const box = $('workers');
  box.hidden = !pool?.enabled;
  if (!pool?.enabled) return;
  const workers = pool.workers || [];
  const queued = pool.queued || {}, running = pool.running || {}, free = pool.free_slots || {};
  const executors = [...new Set([...Object.keys(queued), ...Object.keys(running), ...Object.keys(free)])].sort();
  const used = workers.reduce((n, w) => n + w.leases.length, 0);
  const slots = workers.reduce((n, w) => n + w.slots, 0);
  $('workers-summary').textContent = workers.length
    ? `${workers.length} worker${workers.length === 1 ? '' : 's'} connected · ${used} of ${slots} slot${slots === 1 ? '' : 's'} in use`
    : 'No worker is connected: turns placed on workers wait until one joins.';
  // Turns waiting per executor: what a person (and the autoscaler) looks at first.
  $('workers-queue').replaceChildren(...executors.map((x) => el('li', { 'data-executor': x, class: queued[x] && !free[x] ? 'bad-text' : '' },
    el('strong', { text: x }), `: ${queued[x] || 0} waiting · ${running[x] || 0} running · ${free[x] || 0} free slot${free[x] === 1 ? '' : 's'}`)));
  $('workers-list').replaceChildren(...workers.map((w) => el('tr', { 'data-worker': w.id },
    el('td', {}, el('strong', { class: 'worker-name', text: w.id })),
    el('td', { text: w.executors.join(', ') }),
    el('td', { class: 'leases-used', text: `${w.leases.length}/${w.slots}` }),
    el('td', {}, w.leases.length ? w.leases.map(leaseNode) : el('span', { class: 'muted', text: 'none' })),
    el('td', { class: 'heartbeat', text: `last heartbeat ${heartbeatText(secondsNow(w))}` }),
    el('td', {}, el('button', { type: 'button', class: 'secondary small revoke-button', text: 'Revoke…', 'aria-label': `Revoke worker ${w.id}`,
      onclick: () => askRevoke(w) })))));
  $('workers-table').hidden = workers.length === 0;
}

// ---------------------------------------------------------------------------------------------
// Revoke: a command, confirmed first, recorded with who gave it.

function askRevoke(w) {
  wk.revoking = w;
  $('revoke-title').textContent = `Revoke worker ${w.id}?`;
  $('revoke-what').textContent = w.leases.length
    ? `It holds ${w.leases.length} turn${w.leases.length === 1 ? '' : 's'} (${w.leases.join(', ')}): each is offered again to the other workers.`
    : 'It holds no turn now.';
  $('revoke-name').value = hooks.savedName();
  $('revoke-name').closest('label').hidden = hooks.usesToken();
  $('revoke-error').textContent = '';
  $('revoke-dialog').showModal();
}

async function confirmRevoke(ev) {
  if (ev.submitter?.value !== 'revoke' || !wk.revoking) return;  // Cancel closes the dialog
  ev.preventDefault();
  const button = $('revoke-confirm');
  button.disabled = true;
  const name = $('revoke-name').value;
  hooks.rememberName(name);
  const id = wk.revoking.id;
  const r = await command(`/api/workers/${encodeURIComponent(id)}/revoke`, { confirm: true, name });
  button.disabled = false;
  if (!r.ok) { $('revoke-error').textContent = r.body.error || `HTTP ${r.status}`; return; }
  hooks.announce(`Worker ${id} revoked by ${r.body.by}.`);
  $('revoke-dialog').close();
  wk.revoking = null;
  hooks.onChanged();
}
