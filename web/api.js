// The panel's only way to the daemon: JSON reads, commands with the CSRF token, live updates.
let session = null;

// A 401 means this browser is not logged in (it never opened the login link, or the token
// changed): the page says how to log in instead of showing HTTP errors everywhere.
let onLoggedOut = () => {};
export function whenLoggedOut(callback) { onLoggedOut = callback; }
const LOGIN_HINT = "Not logged in: open the link that `superagent panel-url` prints on the daemon's host, then try again.";

export async function loadSession() {
  const res = await fetch('/api/session', { cache: 'no-store' });
  if (res.status === 401) onLoggedOut();
  if (!res.ok) throw Object.assign(new Error(`session: HTTP ${res.status}`), { status: res.status });
  session = await res.json();
  return session;
}

export function currentSession() { return session; }

export async function getJson(path) {
  const res = await fetch(path, { cache: 'no-store' });
  let body = null;
  try { body = await res.json(); } catch { body = { error: `HTTP ${res.status}` }; }
  if (res.status === 401) { onLoggedOut(); body = { error: LOGIN_HINT }; }
  if (!res.ok) throw Object.assign(new Error(body.error || `HTTP ${res.status}`), { status: res.status, body });
  return body;
}

// A command: same-origin POST, JSON body, CSRF token. A stale token (the daemon restarted) is
// refreshed once and the command retried.
export async function command(path, body = {}, retried = false) {
  if (!session) {
    try { await loadSession(); } catch (e) {
      if (e.status === 401) return { ok: false, status: 401, body: { error: LOGIN_HINT } };
      throw e;
    }
  }
  const res = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': session.csrf_token },
    body: JSON.stringify(body),
  });
  let out = null;
  try { out = await res.json(); } catch { out = { error: `HTTP ${res.status}` }; }
  if (res.status === 401) { onLoggedOut(); return { ok: false, status: 401, body: { error: LOGIN_HINT } }; }
  if (res.status === 403 && !retried && /CSRF/.test(out.error || '')) {
    await loadSession();
    return command(path, body, true);
  }
  return { ok: res.ok, status: res.status, body: out };
}

// Live updates: calls onChange when the store changed, onState('live'|'reconnecting'|'polling').
// EventSource reconnects by itself after a dropped stream; when the server refuses a stream
// (too many open) we fall back to a slow poll and try the stream again later.
export function live({ onChange, onState, onHello }) {
  let es = null;
  let retryTimer = null;
  const connect = () => {
    clearTimeout(retryTimer);
    es = new EventSource('/api/events');
    es.addEventListener('hello', (ev) => {
      onState('live');
      try { onHello(JSON.parse(ev.data)); } catch { /* ignore */ }
      onChange();  // catch up on whatever changed while disconnected
    });
    es.addEventListener('change', () => onChange());
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) {
        onState('polling');
        retryTimer = setTimeout(() => { onChange(); connect(); }, 15000);
      } else {
        onState('reconnecting');
      }
    };
  };
  connect();
  return () => { clearTimeout(retryTimer); if (es) es.close(); };
}
