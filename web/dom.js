// Tiny DOM helpers: every text goes through textContent, never innerHTML (messages are data).
export const $ = (id) => document.getElementById(id);

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

// "3 min ago" with the exact time as a tooltip; re-rendered by refreshTimes().
export function when(iso) {
  if (!iso) return el('span', { class: 'muted', text: 'never' });
  return el('time', { datetime: iso, title: new Date(iso).toLocaleString(), text: ago(iso) });
}

export function ago(iso) {
  const s = Math.round((Date.now() - new Date(iso).getTime()) / 1000);
  if (s < 45) return 'just now';
  if (s < 90) return '1 min ago';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 36) return `${h} h ago`;
  return new Date(iso).toLocaleDateString();
}

export function refreshTimes(root = document) {
  for (const t of root.querySelectorAll('time[datetime]')) t.textContent = ago(t.getAttribute('datetime'));
}

export const stageLabel = (s) => ({
  waiting_for_person: 'waiting for a person', working: 'working', idle: 'idle', ready: 'ready',
  blocked: 'blocked', ended: 'ended',
}[s] || s);

export function kv(pairs) {
  const dl = el('dl', { class: 'kv' });
  for (const [k, v] of pairs) {
    if (v === undefined) continue;
    dl.append(el('dt', { text: k }), el('dd', {}, v ?? '—'));
  }
  return dl;
}
