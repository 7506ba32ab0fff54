// The communication center (SPEC §10): sessions (live and dormant) and groups side by side, a
// session's transcript (with its token usage), and writing to sessions as the person you are.
// Live like the rest of the page: panel.js calls refreshIntercom() whenever the store changed
// (Server-Sent Events); nothing here polls. The composer is static markup, so a refresh never
// touches what a person is typing, and a failed send keeps the text and says why.
import { command, getJson } from './api.js';
import { $, el, when } from './dom.js';

const ic = {
  overview: null,
  selected: null,      // {type: 'session'|'group', id}
  seq: 0,              // answers to older selections are dropped (the original showed stale ones)
  shown: '',           // what the feed shows now (selection key), to know when to scroll
  confirmDelete: null, // group id armed for deletion
};
let hooks = {};

const statusClass = (s) => ({ working: 'working', idle: 'idle', waiting_for_person: 'waiting_for_person', dormant: 'ended' }[s] || '');
const statusText = (s) => ({ working: 'working', idle: 'idle', waiting_for_person: 'waiting for a person', dormant: 'dormant' }[s] || s);
// "idle" is what the intercom needs to know; a person also wants to see a blocked or ready Ticket.
const sessionStatusText = (s) => (s.status === 'idle' && (s.ticket_stage === 'blocked' || s.ticket_stage === 'ready')
  ? `idle — Ticket ${s.ticket_stage}` : statusText(s.status));
const sessions = () => ic.overview?.sessions || [];
const findSession = (id) => sessions().find((s) => s.id === id);
const titleOf = (id) => findSession(id)?.title || id;
const key = (sel) => (sel ? `${sel.type}:${sel.id}` : '');

export function initIntercom(h) {
  hooks = h;
  $('ic-compose').addEventListener('submit', send);
  $('ic-group-form').addEventListener('submit', createGroup);
  $('ic-new-form').addEventListener('submit', newSession);
  $('ic-tools').addEventListener('change', () => loadSelected());
}

export async function refreshIntercom() {
  let o;
  try {
    o = await getJson('/api/intercom');
  } catch (e) {
    $('ic-body').hidden = true;
    $('ic-off').hidden = false;
    $('ic-off').textContent = e.status === 503 ? 'The communication center is off: this daemon runs no intercom.' : `Sessions cannot be read (${e.message}).`;
    return;
  }
  ic.overview = o;
  $('ic-off').hidden = true;
  $('ic-body').hidden = false;
  renderSide();
  await loadSelected();
}

// ---------------------------------------------------------------------------------------------
// Side: live, dormant, groups

function sessionItem(s) {
  const selected = ic.selected?.type === 'session' && ic.selected.id === s.id;
  return el('li', { 'data-session': s.id, 'data-status': s.status },
    el('button', { type: 'button', class: 'ic-item', 'aria-current': selected ? 'true' : false, onclick: () => select({ type: 'session', id: s.id }) },
      el('span', { class: 'ic-item-title', text: s.title || s.id, title: s.id }),
      el('span', { class: 'ic-item-meta' },
        el('span', { class: `stage ${statusClass(s.status)}`, text: sessionStatusText(s) }),
        s.queued ? el('span', { class: 'badge', text: `${s.queued} waiting`, title: 'Messages in its inbox' }) : '',
        ' ', when(s.last_activity))));
}

function renderSide() {
  const live = sessions().filter((s) => s.status !== 'dormant');
  const dormant = sessions().filter((s) => s.status === 'dormant');
  $('ic-live').replaceChildren(...live.map(sessionItem));
  $('ic-live').hidden = live.length === 0;
  $('ic-dormant').hidden = dormant.length === 0;
  $('ic-live-empty').hidden = live.length > 0;
  $('ic-live-count').textContent = live.length ? `(${live.length})` : '';
  $('ic-dormant').replaceChildren(...dormant.map(sessionItem));
  $('ic-dormant-empty').hidden = dormant.length > 0;
  $('ic-dormant-count').textContent = dormant.length ? `(${dormant.length})` : '';
  $('ic-groups').replaceChildren(...(ic.overview.groups || []).map((g) => {
    const selected = ic.selected?.type === 'group' && ic.selected.id === g.id;
    return el('li', { 'data-group': g.id },
      el('button', { type: 'button', class: 'ic-item', 'aria-current': selected ? 'true' : false, onclick: () => select({ type: 'group', id: g.id }) },
        el('span', { class: 'ic-item-title', text: g.automatic ? 'Sessions that have talked' : g.name }),
        el('span', { class: 'ic-item-meta' }, el('span', { class: 'badge', text: `${g.members.length} member${g.members.length === 1 ? '' : 's'}` }),
          g.automatic ? el('span', { class: 'muted', text: ' automatic' }) : '')));
  }));
  // A selection that no longer exists (a deleted group) falls back to nothing.
  if (ic.selected?.type === 'group' && !(ic.overview.groups || []).some((g) => g.id === ic.selected.id)) ic.selected = null;
  if (ic.selected?.type === 'session' && !findSession(ic.selected.id)) ic.selected = null;
}

function select(sel) {
  if (key(sel) !== key(ic.selected)) {
    ic.selected = sel;
    ic.confirmDelete = null;
    $('ic-error').textContent = '';
    $('ic-sent').textContent = '';
    $('ic-feed').replaceChildren(el('li', { class: 'muted', text: 'Loading…' }));
    $('ic-feed-empty').hidden = true;
  }
  renderSide();
  loadSelected();
}

// ---------------------------------------------------------------------------------------------
// Main pane

async function loadSelected() {
  const sel = ic.selected;
  $('ic-pick').hidden = !!sel;
  $('ic-view').hidden = !sel;
  if (!sel) return;
  const seq = ++ic.seq;
  let d;
  try {
    d = await getJson(sel.type === 'session' ? `/api/intercom/sessions/${encodeURIComponent(sel.id)}` : `/api/intercom/groups/${encodeURIComponent(sel.id)}`);
  } catch (e) {
    if (seq !== ic.seq) return;
    $('ic-feed').replaceChildren(el('li', { class: 'bad-text', text: e.message }));
    return;
  }
  if (seq !== ic.seq || key(sel) !== key(ic.selected)) return;  // a newer selection or refresh won
  if (sel.type === 'session') renderSession(d); else renderGroup(d);
}

function long(text, max = 1200) {
  if (text.length <= max) return el('div', { class: 'ic-text', text });
  return el('div', { class: 'ic-text' }, text.slice(0, max), el('details', {}, el('summary', { text: `${text.length - max} more characters` }), text.slice(max)));
}

function bubble({ role, who, at, text, extra }) {
  return el('li', { class: `ic-msg ${role}` },
    el('div', { class: 'ic-msg-head' }, who, ' · ', when(at)),
    text ? long(text) : '', extra || '');
}

function fillFeed(items, emptyText) {
  const feed = $('ic-feed');
  const atBottom = feed.scrollTop + feed.clientHeight >= feed.scrollHeight - 8;
  const fresh = ic.shown !== key(ic.selected);
  feed.replaceChildren(...items);
  $('ic-feed-empty').hidden = items.length > 0;
  $('ic-feed-empty').textContent = emptyText;
  if (fresh || atBottom) feed.scrollTop = feed.scrollHeight;  // follow the conversation
  ic.shown = key(ic.selected);
}

function setComposer({ label, placeholder, disabled = false }) {
  $('ic-send').textContent = label;
  $('ic-text').placeholder = placeholder;
  $('ic-send').disabled = disabled;
  const token = hooks.usesToken();
  $('ic-name-field').hidden = token;
  if (!token && !$('ic-name').value) $('ic-name').value = hooks.savedName();
}

function renderSession(d) {
  const s = d.session;
  $('ic-title').textContent = s.title || s.id;
  $('ic-status').className = `stage ${statusClass(s.status)}`;
  $('ic-status').textContent = s.status === 'dormant' ? 'dormant — its Ticket ended' : sessionStatusText(s);
  const u = d.token_usage;
  const tokens = u && u.calls ? `${u.total_tokens.toLocaleString()} tokens in ${u.calls} model call${u.calls === 1 ? '' : 's'} (prompt ${u.prompt_tokens.toLocaleString()}, completion ${u.completion_tokens.toLocaleString()}, cache hits ${u.cache_hit_tokens.toLocaleString()})` : 'no model calls recorded';
  $('ic-meta').replaceChildren(`${s.id}`, s.ticket ? ` · Ticket #${s.ticket}` : '', ` · ${tokens} · wake budget ${d.wake_budget - d.wakes_spent} of ${d.wake_budget} left`);
  $('ic-meta').dataset.tokens = u ? String(u.total_tokens) : '';
  $('ic-members').hidden = true;
  $('ic-tabs').hidden = false;
  $('ic-delivery').disabled = false;
  const tools = $('ic-tools').checked;
  let items;
  if (tools) {
    items = d.transcript.map((e) => bubble({
      role: e.kind === 'input' ? 'user' : e.kind === 'assistant' ? 'assistant' : 'tool',
      who: e.kind === 'input' ? (e.from ? `input from ${e.from}` : 'input') : e.kind === 'assistant' ? 'model' : e.kind.replace('_', ' '),
      at: e.at, text: e.text || '',
      extra: e.tools ? el('ul', { class: 'ic-tools' }, e.tools.map((t) => el('li', {}, el('code', { text: `${t.name}(${t.arguments})` })))) : '',
    }));
    if (d.transcript_cut) items.unshift(el('li', { class: 'muted small-text', text: `${d.transcript_cut} older events not shown` }));
  } else {
    items = d.surface.map((e) => bubble({ role: e.role, who: e.role === 'user' ? (e.from ? `${e.from} → the session` : 'to the session') : s.title || s.id, at: e.at, text: e.text }));
  }
  fillFeed(items, 'Nothing said yet.');
  const dormant = s.status === 'dormant';
  const final = dormant && d.mandate && d.mandate !== 'active';  // stopped or revoked: never resumes
  if (final) $('ic-status').textContent = `dormant — Mandate ${d.mandate}`;
  setComposer({
    label: dormant && !final ? `Send and resume Ticket #${s.ticket}` : 'Send',
    placeholder: final ? `Its Mandate was ${d.mandate}: nothing can reach this session any more`
      : dormant ? 'Your message resumes its Ticket if the Mandate still holds (revalidated now)' : 'Write to this session as yourself',
  });
  $('ic-as').textContent = 'Sent as you, a person — never as a session.';
}

function renderGroup(g) {
  const group = (ic.overview.groups || []).find((x) => x.id === g.group_id);
  if (!group) return;
  $('ic-title').textContent = group.automatic ? 'Sessions that have talked' : group.name;
  $('ic-status').className = 'stage';
  $('ic-status').textContent = group.automatic ? 'automatic group' : 'group';
  $('ic-meta').replaceChildren(`${group.members.length} member${group.members.length === 1 ? '' : 's'}`,
    group.automatic ? ' · every pair of sessions that talked joins; dormant ones leave' : '');
  $('ic-tabs').hidden = true;
  const members = $('ic-members');
  members.hidden = false;
  const inGroup = new Set(group.members.map((m) => m.id));
  const candidates = sessions().filter((s) => s.status !== 'dormant' && !inGroup.has(s.id));
  const add = el('select', { 'aria-label': 'Session to add' }, candidates.map((s) => el('option', { value: s.id, text: s.title || s.id })));
  const error = el('p', { class: 'error', role: 'alert' });
  const act = async (path, body, what) => {
    error.textContent = '';
    const r = await command(path, { ...body, name: nameNow() });
    if (!r.ok) { error.textContent = r.body.error || `HTTP ${r.status}`; return; }
    hooks.announce(what);
    hooks.onChanged();
  };
  const deleteArmed = ic.confirmDelete === group.id;
  members.replaceChildren(
    el('ul', { class: 'ic-member-list' }, group.members.map((m) => el('li', { 'data-member': m.id },
      el('span', { text: m.title || m.id, title: m.id }), ' ',
      el('span', { class: `stage ${statusClass(findSession(m.id)?.status)}`, text: statusText(findSession(m.id)?.status || 'unknown') }),
      group.automatic ? '' : el('button', { type: 'button', class: 'ghost small', text: 'Remove', 'aria-label': `Remove ${m.title || m.id}`,
        onclick: () => act(`/api/intercom/groups/${group.id}/remove`, { member: m.id }, `Removed ${m.title || m.id} from ${group.name}.`) })))),
    group.automatic ? '' : el('div', { class: 'row' },
      candidates.length ? add : el('span', { class: 'muted small-text', text: 'Every live session is a member.' }),
      candidates.length ? el('button', { type: 'button', class: 'secondary small', text: 'Add', onclick: () => act(`/api/intercom/groups/${group.id}/members`, { member: add.value }, `Added ${titleOf(add.value)} to ${group.name}.`) }) : '',
      el('button', { type: 'button', class: deleteArmed ? 'danger small' : 'secondary small', text: deleteArmed ? 'Really delete?' : 'Delete group',
        onclick: () => {
          if (!deleteArmed) { ic.confirmDelete = group.id; renderGroup(g); return; }
          act(`/api/intercom/groups/${group.id}/delete`, {}, `Deleted group ${group.name}.`);
        } })),
    error);
  const relays = (g.relays || []).map((r) => ({ at: r.at, node: bubble({ role: 'relay', who: `${r.from_person ? `${r.from_person} (person)` : titleOf(r.from)} → ${titleOf(r.to)}`, at: r.at, text: r.text }) }));
  const entries = g.entries.map((e) => ({ at: e.at, node: bubble({ role: e.role, who: e.role === 'user' ? `to ${e.title || e.session}` : e.title || e.session, at: e.at, text: e.text }) }));
  const all = entries.concat(relays).sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)).map((x) => x.node);
  fillFeed(all, 'Nothing said in this group yet.');
  const others = group.members.filter((m) => findSession(m.id)?.status !== 'dormant').length;
  setComposer({ label: `Broadcast to ${others} member${others === 1 ? '' : 's'}`, placeholder: 'One message to every member, as yourself', disabled: group.members.length === 0 });
  $('ic-as').textContent = 'Each member gets it under the usual rules; dormant members are skipped.';
}

// ---------------------------------------------------------------------------------------------
// Commands

function nameNow() {
  const name = $('ic-name').value.trim();
  if (name) hooks.rememberName(name);
  return name || hooks.savedName();
}

async function send(ev) {
  ev.preventDefault();
  const sel = ic.selected;
  if (!sel) return;
  const text = $('ic-text').value;
  const error = $('ic-error');
  $('ic-sent').textContent = '';
  if (!text.trim()) { error.textContent = 'Write a message first.'; return; }
  error.textContent = '';
  $('ic-send').disabled = true;
  const body = { text, delivery: $('ic-delivery').value, name: nameNow() };
  const path = sel.type === 'session' ? `/api/intercom/sessions/${encodeURIComponent(sel.id)}/send` : `/api/intercom/groups/${encodeURIComponent(sel.id)}/broadcast`;
  const r = await command(path, body);
  $('ic-send').disabled = false;
  if (!r.ok) {
    // The text stays, with the exact reason it was refused.
    error.textContent = r.body.error || `HTTP ${r.status}`;
    return;
  }
  $('ic-text').value = '';
  if (sel.type === 'session') {
    $('ic-sent').textContent = r.body.resumed ? `Sent; Ticket resumed (${r.body.applied}).` : `Sent (${r.body.applied === 'queue' ? 'queued for its next step' : r.body.applied}).`;
  } else {
    const skipped = r.body.results.filter((x) => !x.ok).length;
    $('ic-sent').textContent = `Broadcast to ${r.body.delivered} member${r.body.delivered === 1 ? '' : 's'}${skipped ? `, ${skipped} skipped` : ''}.`;
  }
  hooks.onChanged();
}

async function createGroup(ev) {
  ev.preventDefault();
  const input = $('ic-group-name');
  const error = $('ic-group-error');
  error.textContent = '';
  const members = ic.selected?.type === 'session' && findSession(ic.selected.id)?.status !== 'dormant' ? [ic.selected.id] : [];
  const r = await command('/api/intercom/groups', { group_name: input.value, members, name: nameNow() });
  if (!r.ok) { error.textContent = r.body.error || `HTTP ${r.status}`; return; }
  input.value = '';
  hooks.announce(`Group ${r.body.name} created.`);
  ic.selected = { type: 'group', id: r.body.group_id };
  hooks.onChanged();
}

// "New session": an explicit request from you, the panel's operator. It goes through the Eval
// like any request; when accepted, its Ticket's worker session appears under Live.
async function newSession(ev) {
  ev.preventDefault();
  const area = $('ic-new-text');
  const out = $('ic-new-result');
  out.className = 'small-text';
  if (!area.value.trim()) { out.textContent = 'Write what the session should do first.'; out.classList.add('bad-text'); return; }
  const r = await command('/api/intercom/sessions', { text: area.value, name: nameNow() });
  if (!r.ok) { out.textContent = r.body.error || `HTTP ${r.status}`; out.classList.add('bad-text'); return; }
  area.value = '';
  out.textContent = 'Requested. Once the Eval accepts it, its session appears under Live.';
  out.classList.add('ok-text');
  hooks.onChanged();
}
