// The attention-first panel (SPEC §9): what needs a person, then health, then history.
// Plain ES modules, no build step. Every read is /api/…; the page refreshes itself when the
// daemon's store changes (Server-Sent Events), so it can stay open all day.
import { command, getJson, live, loadSession, currentSession, whenLoggedOut } from './api.js';
import { $, el, when, refreshTimes, stageLabel, kv } from './dom.js';
import { initIntercom, refreshIntercom } from './intercom.js';
import { initWorkers, refreshWorkers } from './workers.js';
import { refreshJudgement, renderProposals } from './judgement.js';

const STAGES = ['waiting_for_person', 'blocked', 'working', 'idle', 'ready', 'ended'];
const state = {
  stage: '',            // History filter
  repo: '',             // … by repository ("owner/name" in lower case), when several are served
  tickets: [],          // History rows shown
  more: false,          // an older page exists
  open: new Set(),      // Tickets whose detail is expanded
  questionId: null,     // the question card on screen (kept while a person types)
  status: null,
  bootId: null,
  loggedOut: false,     // the daemon answered 401: this browser has not used the login link
};

// ---------------------------------------------------------------------------------------------
// Who is acting: a name the person typed once (remembered), unless the browser authenticated.

const nameKey = 'superagent.name';
const savedName = () => localStorage.getItem(nameKey) || '';
function rememberName(name) {
  if (name) localStorage.setItem(nameKey, name.trim());
}
// The browser authenticated with a user name (HTTP Basic with panel.token_env): no name to ask.
const usesToken = () => Boolean(currentSession()?.user);

// ---------------------------------------------------------------------------------------------
// Needs you

function renderNeeds(needs) {
  const section = $('needs');
  const empty = needs.count === 0;
  section.classList.toggle('calm-state', empty);
  $('needs-empty').hidden = !empty;
  $('needs-h').textContent = empty ? 'Needs you:' : `Needs you (${needs.count})`;
  renderSetup(needs.setup || []);
  renderQuestion(needs.questions);
  renderDecisions(needs.decisions);
  renderProblems(needs.problems);
  renderUnserved(needs.workers || null);
  renderPolicyFile(needs.policy_file || null);
  renderSecrets(needs.secrets || null);
  renderSetAside(needs.set_aside || []);
  renderUnanswered(needs.unanswered || null);
  renderNotAllowed(needs.not_allowed || null);
  renderVerdicts(needs.verdicts || []);
  renderProposals(needs.mode_proposals || []);
}

// What observe mode would have done, for a person to judge (issue 38): one card per rule with
// its unanswered messages (a stranger's text: shown as text only) and the rule's record so far.
// Each answer is final; the card is read again after it, as after every command.
const VERDICTS = [['yes', 'Yes, a request', 'small'], ['no', 'No', 'secondary small'], ['unknown', "Don't know", 'ghost small']];
function renderVerdicts(cards) {
  $('verdicts-slot').replaceChildren(...cards.map((c) => el('article', { class: 'attention verdicts', 'data-rule': c.rule },
    el('div', { class: 'meta' }, el('span', { class: 'problem-kind', text: 'was it a request?' }), ' · rule ',
      el('span', { class: 'rule', text: c.rule })),
    el('p', {}, el('strong', { text: c.what })),
    el('p', { class: 'muted verdict-record', text: `So far: ${c.yes} yes, ${c.no} no, ${c.unknown} don't know; ${c.precision_words}.` }),
    el('ul', { class: 'problems-list verdict-items' }, ...c.items.map((i) => verdictItem(c.rule, i))),
    c.more > 0 ? el('p', { class: 'muted', text: `${c.more} more after these.` }) : '',
    el('p', { class: 'fix', text: c.fix }),
  )));
}

function verdictItem(rule, item) {
  const error = el('p', { class: 'error', role: 'alert' });
  const buttons = VERDICTS.map(([verdict, label, cls]) => el('button', {
    type: 'button', class: cls, 'data-verdict': verdict, text: label,
    onclick: async () => {
      for (const b of buttons) b.disabled = true;
      const r = await command(`/api/decisions/${item.decision}/verdict`, { verdict, name: savedName() });
      if (!r.ok) {
        for (const b of buttons) b.disabled = false;
        error.textContent = r.body.error || `HTTP ${r.status}`;
        return;
      }
      announce(`Answered "${label}" for rule ${rule} (${r.body.by}).`);
      refresh();
    },
  }));
  return el('li', { 'data-decision': item.decision },
    el('span', { class: 'muted' }, threadLabel(item.thread) || item.thread, ' · ', when(item.at)),
    el('blockquote', { class: 'request-quote', text: item.text }),
    el('div', { class: 'row' }, ...buttons),
    error);
}

// People who asked and have heard nothing for over a minute (issue 34): each with why.
function renderUnanswered(card) {
  $('unanswered-slot').replaceChildren(...(card ? [el('article', { class: 'attention unanswered' },
    el('div', { class: 'meta' }, el('span', { class: 'problem-kind', text: 'not answered' })),
    el('p', {}, el('strong', { text: card.what })),
    el('ul', { class: 'problems-list' }, ...card.items.map((i) => el('li', { 'data-trigger': i.trigger },
      el('strong', { text: i.from || 'someone' }), ' · ', i.url ? el('a', { href: i.url, text: i.where, rel: 'noopener noreferrer', target: '_blank' }) : i.where,
      ' · ', when(i.received_at), el('div', { class: 'muted', text: i.quote }), el('div', { text: i.why })))),
    el('p', { class: 'fix', text: card.fix }),
  )] : []));
}

// Turns waiting for an executor no connected worker offers (issue 36): they would wait for ever.
function renderUnserved(card) {
  $('workers-slot').replaceChildren(...(card ? [el('article', { class: 'attention unserved' },
    el('div', { class: 'meta' }, el('span', { class: 'problem-kind', text: 'no worker' }), ' · since ', when(card.since)),
    el('p', {}, el('strong', { text: card.what })),
    el('p', { class: 'fix', text: card.fix }),
  )] : []));
}

// Mentions from people the policy does not let ask, counted (issue 34): quiet, one card.
function renderNotAllowed(card) {
  $('not-allowed-slot').replaceChildren(...(card ? [el('article', { class: 'attention not-allowed' },
    el('div', { class: 'meta' }, el('span', { class: 'problem-kind', text: 'not allowed to ask' })),
    el('p', {}, el('strong', { text: card.what })),
    el('p', { class: 'fix', text: card.fix }),
  )] : []));
}

// What is not set up (issue 24): one card per missing piece, with the key or command that fixes it.
function renderSetup(gaps) {
  $('setup-slot').replaceChildren(...gaps.map((g) => el('article', { class: 'attention setup', 'data-piece': g.piece },
    el('div', { class: 'meta' }, el('span', { class: 'problem-kind', text: 'set up' }), ` · ${g.piece}`,
      g.since ? ' · last tried ' : '', g.since ? when(g.since) : ''),
    el('p', {}, el('strong', { text: g.what })),
    g.last_error ? el('p', { class: 'error-text', text: `${g.path ? `${g.path}: ` : ''}${g.last_error}` }) : '',
    el('p', { class: 'fix', text: g.fix }),
  )));
}

// A policy file on disk that is not the version in force, with its problems as file:line:col.
function renderPolicyFile(card) {
  $('policy-file-slot').replaceChildren(...(card ? [el('article', { class: 'attention policy-file' },
    el('div', { class: 'meta' }, el('span', { class: 'problem-kind', text: 'policy file' }), ` · ${card.file}`),
    el('p', {}, el('strong', { text: card.what })),
    card.problems.length ? el('ul', { class: 'problems-list' }, ...card.problems.map((p) => el('li', { text: p }))) : '',
    el('p', { class: 'fix', text: card.fix }),
  )] : []));
}

// What the outbound filter kept out of published text (issue 33): one quiet card, never a value.
function renderSecrets(card) {
  $('secrets-slot').replaceChildren(...(card ? [el('article', { class: 'attention secrets' },
    el('div', { class: 'meta' }, el('span', { class: 'problem-kind', text: 'secret kept out' }), ' · last ', when(card.last_at)),
    el('p', {}, el('strong', { text: card.what })),
    el('p', { class: 'fix', text: card.fix }),
  )] : []));
}

// One question at a time: the oldest first. The card is rebuilt only when the question changes,
// so a live update never wipes what a person is typing.
function renderQuestion(questions) {
  const slot = $('question-slot');
  if (!questions.length) {
    slot.replaceChildren();
    state.questionId = null;
    return;
  }
  const q = questions[0];
  const moreText = questions.length > 1 ? `${questions.length - 1} more question${questions.length > 2 ? 's' : ''} waiting after this one.` : '';
  if (state.questionId === q.id && slot.firstChild) {
    slot.querySelector('.more').textContent = moreText;
    return;
  }
  state.questionId = q.id;
  const asked = q.question;
  const form = el('form', { class: 'answer-form', novalidate: true });
  const fields = answerFields(q.id, asked.question, asked.form || {});
  const nameInput = el('input', { name: 'name', value: savedName(), autocomplete: 'name', maxlength: '64', 'aria-label': 'Your name' });
  const error = el('p', { class: 'error', role: 'alert', id: `answer-error-${q.id}` });
  const submit = el('button', { type: 'submit', text: 'Send answer' });
  form.append(
    fields.node,
    usesToken() ? '' : el('label', { class: 'name-field' }, el('span', {}, 'Your name ', el('span', { class: 'muted', text: '(recorded with the answer)' })), nameInput),
    error,
    el('div', { class: 'row' }, submit),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const answer = fields.value();
    // Only "nothing at all" is caught here; everything else is the daemon's to judge, and its
    // words are shown as they are.
    if (answer === null) { error.textContent = fields.hasOptions ? 'Choose an option or write an answer first.' : 'Write an answer first.'; fields.focus(); return; }
    submit.disabled = true;
    error.textContent = '';
    rememberName(nameInput.value);
    const r = await command(`/api/tickets/${q.id}/answer`, { answer, name: nameInput.value });
    submit.disabled = false;
    if (!r.ok) { error.textContent = r.body.error || `HTTP ${r.status}`; fields.focus(); return; }
    announce(`Answer sent to Ticket #${q.id}; it resumes.`);
    state.questionId = null;
    refresh();
  });
  const request = q.request;
  slot.replaceChildren(el('article', { class: 'attention question-card', 'data-ticket': q.id, 'aria-label': `Question from Ticket ${q.id}` },
    el('div', { class: 'meta' }, `Ticket #${q.id} · asked of `, el('strong', { class: 'asked', text: asked.actor || 'a person' }),
      ` ${threadLabel(asked.thread)} · `, when(q.updated_at)),
    request ? el('p', { class: 'meta' }, 'About: ', q.scope) : '',
    requestContext(q),
    form,
    el('p', { class: 'more', text: moreText }),
  ));
}

// What was asked for, by whom and where, quoted as they wrote it (cut and marked by the daemon),
// with a link to the discussion: a card a person can act on without opening anything else.
function requestContext(t) {
  const r = t.request;
  if (!r) return '';
  return el('div', { class: 'request-context' },
    el('p', { class: 'meta' }, 'Asked for by ', el('strong', { text: r.actor || 'someone' }), ` ${threadLabel(r.thread)}`,
      r.url ? ' · ' : '', r.url ? el('a', { href: r.url, target: '_blank', rel: 'noopener noreferrer', text: 'open the discussion' }) : ''),
    t.request_quote ? el('blockquote', { class: 'request-quote', text: t.request_quote }) : '');
}

// Where a question was asked, as a person says it: "on GitHub issue acme/api#12", "in a Feishu
// chat". GitHub keys name their repository: "github:<owner>/<name>:issue:<n>" (github_threads.h).
function threadLabel(thread) {
  const [source, repo = '', kind, rest = ''] = String(thread || '').split(':');
  const number = rest.replace(/[^0-9].*$/, '');
  if (source === 'github' && repo.includes('/') && (kind === 'issue' || kind === 'pull') && number)
    return `on GitHub ${kind === 'pull' ? 'pull request' : 'issue'} ${repo}#${number}`;
  if (source === 'github') return 'on GitHub';
  const [, chatKind] = String(thread || '').split(':');
  if (source === 'feishu') return chatKind === 'thread' ? 'in a Feishu topic' : 'in a Feishu chat';
  if (source === 'panel') return 'in the panel';
  return thread ? `on ${thread}` : '';
}

// The question's form (question.h's QuestionForm): the question names the group; numbered options
// are radio buttons; a free-text box only when free_text is true ("Other" beside options). The
// value is {option: n} for a choice, {text} for words, null when nothing was given.
function answerFields(ticket, question, form) {
  const options = Array.isArray(form.options) ? form.options.map(String) : [];
  const freeText = options.length === 0 || form.free_text !== false;
  const set = el('fieldset', { class: 'answer-fields' }, el('legend', { class: 'question', text: question }));
  const radios = options.map((opt, i) => {
    const radio = el('input', { type: 'radio', name: `choice-${ticket}`, value: String(i + 1) });
    set.append(el('label', { class: 'choice' }, radio, el('span', { class: 'choice-number', text: `${i + 1}.` }), ' ', el('span', { class: 'choice-text', text: opt })));
    return radio;
  });
  let text = null;
  let other = null;
  if (freeText && options.length) {
    other = el('input', { type: 'radio', name: `choice-${ticket}`, value: 'other' });
    text = el('input', { type: 'text', name: 'other', autocomplete: 'off', 'aria-label': 'Other answer', placeholder: 'In your own words' });
    // Typing an answer chooses it: the words are what is sent.
    text.addEventListener('input', () => { other.checked = text.value !== ''; });
    set.append(el('label', { class: 'choice other' }, other, el('span', { text: 'Other' })), text);
  } else if (freeText) {
    text = el('textarea', { name: 'answer', 'aria-label': 'Your answer', placeholder: 'Your answer' });
    set.append(text);
  }
  return {
    node: set,
    hasOptions: options.length > 0,
    focus: () => (radios[0] || text)?.focus(),
    value: () => {
      const chosen = radios.findIndex((r) => r.checked);
      if (chosen >= 0) return { option: chosen + 1 };
      if (text && (other === null || other.checked) && text.value !== '') return { text: text.value };
      return null;
    },
  };
}

// A blocked Ticket: why (the cause itself, issue 34), and Retry — a new turn now.
function renderDecisions(blocked) {
  $('decisions-slot').replaceChildren(...blocked.map((t) => {
    const error = el('p', { class: 'error', role: 'alert' });
    const retry = el('button', { type: 'button', class: 'small retry-button', text: 'Retry' });
    retry.addEventListener('click', async () => {
      retry.disabled = true;
      const r = await command(`/api/tickets/${t.id}/retry`, { name: savedName() });
      retry.disabled = false;
      if (!r.ok) { error.textContent = r.body.error || `HTTP ${r.status}`; return; }
      announce(`Ticket #${t.id} retried (${r.body.by}).`);
      refresh();
    });
    return el('article', { class: 'attention', 'data-ticket': t.id },
      el('div', { class: 'meta' }, `Ticket #${t.id} is blocked · `, when(t.updated_at)),
      el('p', {}, el('strong', { text: t.scope })),
      t.stage_reason ? el('p', { class: 'error-text blocked-reason', text: `Why: ${t.stage_reason}` }) : '',
      requestContext(t),
      el('div', { class: 'row' },
        t.stoppable ? retry : '',
        el('button', { type: 'button', class: 'secondary small', text: 'Show', onclick: () => showTicket(t.id) }),
        t.stoppable ? el('button', { type: 'button', class: 'danger small', text: 'Stop…', onclick: () => askStop(t) }) : ''),
      error);
  }));
}

// One card per cause: a platform's failing read paths and deliveries together, what to check,
// and the paths themselves behind a disclosure.
function renderProblems(problems) {
  $('problems-slot').replaceChildren(...problems.map((p) => el('article', { class: 'attention problem', 'data-cause': p.cause },
    el('div', { class: 'meta' }, el('span', { class: 'problem-kind', text: 'problem' }), ' · since ', when(p.since), ` · ${p.failures} failures in a row`),
    el('p', {}, el('strong', { text: p.title })),
    el('p', { class: 'error-text', text: `Last error: ${p.last_error}` }),
    el('p', { class: 'fix', text: p.check }),
    p.paths.length > 1 ? el('details', {}, el('summary', { text: `${p.paths.length} paths` }),
      el('ul', { class: 'problems-list' }, ...p.paths.map((x) => el('li', {}, el('strong', { text: x.label }), ` · ${x.failures} failures since `, when(x.first_at), ` · ${x.message}`)))) : '',
  )));
}

// Poison items the daemon set aside instead of retrying them into a crash loop: what, why, and
// a Retry that requeues it (the Engine clears the count in the same transaction).
function renderSetAside(items) {
  $('set-aside-slot').replaceChildren(...items.map((q) => {
    const error = el('p', { class: 'error', role: 'alert' });
    const retry = el('button', { type: 'button', class: 'secondary small', text: 'Retry' });
    retry.addEventListener('click', async () => {
      retry.disabled = true;
      const r = await command('/api/set-aside/retry', { kind: q.kind, item: q.item, name: savedName() });
      retry.disabled = false;
      if (!r.ok) { error.textContent = r.body.error || `HTTP ${r.status}`; return; }
      announce(`Retrying ${q.what} (${r.body.by}).`);
      refresh();
    });
    return el('article', { class: 'attention set-aside', 'data-kind': q.kind, 'data-item': q.item },
      el('div', { class: 'meta' }, el('span', { class: 'problem-kind', text: 'set aside' }), ' · since ', when(q.set_aside_at)),
      el('p', {}, el('strong', { text: q.what })),
      el('p', { text: q.reason }),
      el('div', { class: 'row' }, retry),
      error);
  }));
}

// ---------------------------------------------------------------------------------------------
// Status

function renderStatus(s) {
  state.status = s;
  $('mode').textContent = s.mode;
  const facts = $('status-list');
  const add = (k, ...v) => facts.append(el('dt', { text: k }), el('dd', {}, ...v));
  facts.replaceChildren();
  const modeText = { off: 'inferred work is not considered', observe: 'inferred work is only recorded, for review', auto: 'inferred work matching a rule is done' }[s.mode] || '';
  add('Mode', el('strong', { text: s.mode }), ` — ${modeText}; explicit requests work in every mode`);
  const p = s.policy || {};
  add('Policy', `version ${s.policy_version}`, p.since ? ' · since ' : '', p.since ? when(p.since) : '', p.origin ? ` · ${p.origin}` : '');
  const slots = s.slots;
  add('Slots', `${slots.in_use} of ${slots.configured} in use (+${slots.reserved_for_people} kept for people${slots.reserved_in_use ? ', in use now' : ''})`,
    slots.execution_running ? (slots.waiting ? ` · ${slots.waiting} waiting` : '')
      : ` · execution is off: no git remote (set execution.git_remote or github.repo)${slots.waiting ? `; ${slots.waiting} accepted Ticket${slots.waiting > 1 ? 's' : ''} wait` : ''}`);
  const trig = s.triggers || {};
  add('Messages', `${(trig.stored || 0) + (trig.filtered || 0)} received (${trig.filtered || 0} filtered)`,
    s.eval_queue ? ` · ${s.eval_queue} waiting for an Eval` : '');
  add('Outbox', `${s.receipts_pending} pending`, s.receipts_failed ? el('span', { class: 'bad-text', text: ` · ${s.receipts_failed} failed` }) : '');

  const box = $('sources');
  box.replaceChildren();
  // How GitHub is read comes first: with many repositories the read paths are a long list.
  const reading = renderReading(s.github_reading);
  if (reading) box.append(reading);
  if (!s.sources.length) {
    box.append(el('p', { class: 'muted', text: 'No Source has reported yet.' }));
  } else {
    const table = (rows) => el('div', { class: 'table-wrap' }, el('table', {},
      el('thead', {}, el('tr', {}, [['Source · path'], ['Last success'], ['Last error'], ['Failures', 'Failures in a row'], ['Skipped', 'Malformed items skipped and counted']].map(([h, title]) => el('th', { text: h, title })))),
      el('tbody', {}, rows.map((h) => el('tr', { 'data-source': `${h.source}:${h.path}` },
        el('td', {}, `${h.source} · ${h.path}`, h.note ? el('div', { class: 'muted note', text: h.note }) : ''),
        el('td', {}, when(h.last_success_at)),
        el('td', {}, h.last_error ? el('span', { class: h.consecutive_failures ? 'bad-text' : 'muted' }, h.last_error, ' · ', when(h.last_error_at)) : '—'),
        el('td', { class: h.consecutive_failures ? 'bad-text' : '', text: String(h.consecutive_failures) }),
        el('td', { text: String(h.skipped_items) }))))));
    // A handful is shown whole; beyond that, what fails and the platforms' own paths, the
    // repositories' healthy paths behind a disclosure.
    const shownWhole = s.sources.length <= 12;
    const first = shownWhole ? s.sources : s.sources.filter((h) => h.consecutive_failures || !h.source.includes(':'));
    const rest = shownWhole ? [] : s.sources.filter((h) => !first.includes(h));
    if (first.length) box.append(table(first));
    if (rest.length) box.append(el('details', { class: 'read-paths' }, el('summary', { text: `Every other read path (${rest.length}, each working)` }), table(rest)));
  }
  if (s.cursors.length) {
    box.append(el('details', {}, el('summary', { text: `Cursors (${s.cursors.length})` }), el('div', { class: 'table-wrap' }, el('table', {},
      el('thead', {}, el('tr', {}, ['Source', 'Cursor', 'Value', 'Updated'].map((h) => el('th', { text: h })))),
      el('tbody', {}, s.cursors.map((c) => el('tr', {},
        el('td', { text: c.source }), el('td', { text: c.name }),
        el('td', { title: c.value }, el('code', { text: c.value.length > 80 ? `${c.value.slice(0, 80)}…` : c.value })),
        el('td', {}, when(c.updated_at)))))))));
  }
  renderChips(s.tickets || {});
}

// How often each GitHub repository is read (issue 37), and what the hour's requests cost.
function everyText(seconds) {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}
const readingWhy = { 'people wait': 'someone waits on it', active: 'active lately', quiet: 'quiet', budget: 'the hour\'s request budget is spent' };

function renderReading(r) {
  if (!r || (!r.repositories.length && !r.rate)) return null;
  const groups = new Map();
  for (const x of r.repositories) {
    const key = `${x.interval_s}|${x.why}`;
    groups.set(key, (groups.get(key) || 0) + 1);
  }
  const parts = [...groups.entries()].sort((a, b) => Number(a[0].split('|')[0]) - Number(b[0].split('|')[0])).map(([key, n]) => {
    const [seconds, why] = key.split('|');
    return `${n} ${n === 1 ? 'repository' : 'repositories'} every ${everyText(Number(seconds))}${why ? ` (${readingWhy[why] || why})` : ''}`;
  });
  const rate = r.rate;
  const budget = rate ? [
    `${rate.counted_last_hour} requests counted in the last hour${rate.budget_per_hour ? ` of ${rate.budget_per_hour} allowed` : ''} (a 304 for unchanged data is free)`,
    rate.remaining >= 0 && rate.limit > 0 ? ` · GitHub: ${rate.remaining} of ${rate.limit} left` : '',
  ] : [];
  const summary = el('p', { id: 'github-reading', class: 'reading' }, el('strong', { text: 'GitHub reading: ' }), parts.join(' · ') || 'no repository read yet', rate ? el('br') : '', ...budget);
  if (!r.repositories.length) return summary;
  return el('div', { class: 'reading-box' }, summary, el('details', {}, el('summary', { text: `Each repository (${r.repositories.length})` }), el('div', { class: 'table-wrap' }, el('table', {},
    el('thead', {}, el('tr', {}, ['Repository', 'Read every', 'Why', 'Last read'].map((h) => el('th', { text: h })))),
    el('tbody', {}, r.repositories.map((x) => el('tr', { 'data-repo': x.repo },
      el('td', { text: x.repo }), el('td', { text: everyText(x.interval_s) }),
      el('td', { text: readingWhy[x.why] || x.why || '—' }), el('td', {}, when(x.last_at)))))))));
}

async function reloadPolicy() {
  const button = $('reload-policy');
  const out = $('reload-result');
  const list = $('reload-problems');
  button.disabled = true;
  out.textContent = 'Reloading…';
  out.className = '';
  list.hidden = true;
  const r = await command('/api/policy/reload', { name: savedName() });
  button.disabled = false;
  const b = r.body;
  if (r.status === 200) {
    out.textContent = b.changed ? `New policy version ${b.version} is in force.` : `Policy unchanged (version ${b.version}).`;
    out.className = 'ok-text';
  } else if (b && b.valid === false) {
    out.textContent = `The policy file has ${b.problems.length} problem${b.problems.length === 1 ? '' : 's'}; version ${b.version} stays in force.`;
    out.className = 'bad-text';
    list.replaceChildren(...b.problems.map((p) => el('li', { text: p })));
    list.hidden = false;
  } else {
    out.textContent = (b && b.error) || `Reload failed (HTTP ${r.status}).`;
    out.className = 'bad-text';
  }
  refresh();
}

// ---------------------------------------------------------------------------------------------
// History

function renderChips(counts) {
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const chip = (stage, label, n) => el('button', {
    type: 'button', class: 'chip', 'aria-pressed': String(state.stage === stage), 'data-stage': stage || 'all',
    onclick: () => { state.stage = stage; state.open.clear(); loadTickets(); renderChips(counts); },
  }, `${label} ${n}`);
  if (!total) { $('stage-filter').replaceChildren(); return; }
  const chips = [chip('', 'All', total)];
  for (const s of STAGES) if (counts[s] || state.stage === s) chips.push(chip(s, stageLabel(s), counts[s] || 0));
  $('stage-filter').replaceChildren(...chips);
}

// One chip per repository served (issue 37), shown only when there are several: a Ticket is a
// repository's when it was asked for there or works there.
function renderRepoChips(repos) {
  const box = $('repo-filter');
  box.hidden = repos.length < 2;
  if (box.hidden) { state.repo = ''; box.replaceChildren(); return; }
  const chip = (repo, label) => el('button', {
    type: 'button', class: 'chip', 'aria-pressed': String(state.repo === repo), 'data-repo': repo || 'all',
    onclick: () => { state.repo = repo; state.open.clear(); loadTickets(); renderRepoChips(repos); },
  }, label);
  box.replaceChildren(chip('', 'Every repository'), ...repos.map((r) => chip(r.toLowerCase(), r)));
}

async function loadTickets(older = false) {
  // A refresh re-reads as many rows as are shown, so "Show older" pages stay open.
  const limit = older ? 30 : Math.min(200, Math.max(30, state.tickets.length));
  const params = new URLSearchParams({ limit: String(limit) });
  if (state.stage) params.set('stage', state.stage);
  if (state.repo) params.set('repo', state.repo);
  if (older && state.tickets.length) params.set('before', state.tickets[state.tickets.length - 1].id);
  const { tickets } = await getJson(`/api/tickets?${params}`);
  state.tickets = older ? state.tickets.concat(tickets) : tickets;
  state.more = tickets.length === limit;
  renderTickets();
}

// Spend against budget in one compact line (issue 22): "12k/300k tokens · $0.40/$2 · 14/120 min ·
// 3/10 turns"; a dimension with no limit shows only its spend. The limits include extensions.
function budgetLine(b) {
  if (!b) return '';
  const n = (v) => (v >= 10000 ? `${Math.round(v / 1000)}k` : String(v));
  const part = (spent, limit, fmt, unit) => `${fmt(spent)}${limit ? `/${fmt(limit)}` : ''}${unit}`;
  const usd = (v) => `$${Number.isInteger(v) ? v : v.toFixed(2)}`;
  const s = b.spent, l = b.budget;
  return [part(s.tokens, l.tokens, n, ' tokens'), part(s.cost_usd, l.cost_usd, usd, ''),
    part(s.wall_clock_minutes, l.wall_clock_minutes, String, ' min'), part(s.turns, l.turns, String, ' turns')].join(' · ') +
    (b.reached ? ` — ${b.reached} budget reached` : '');
}

function renderTickets() {
  const list = $('tickets');
  $('tickets-empty').hidden = state.tickets.length > 0;
  $('tickets-empty').textContent = (state.stage ? `No Tickets ${stageLabel(state.stage)}` : state.repo ? 'No Tickets' : 'No Tickets yet') +
    (state.repo ? ` in ${state.repo}.` : '.');
  $('tickets-more').hidden = !state.more;
  const items = state.tickets.map((t) => {
    const existing = list.querySelector(`li[data-ticket="${t.id}"]`);
    const detail = existing?.querySelector('.detail');
    const open = state.open.has(t.id);
    const head = el('button', { type: 'button', class: 'ticket-head', 'aria-expanded': String(open), onclick: () => toggle(t.id) },
      el('span', { class: 'ticket-id', text: `#${t.id}` }),
      el('span', { class: `stage ${t.stage}`, text: stageLabel(t.stage) }),
      el('span', { class: 'ticket-scope', text: t.scope }),
      t.budget ? el('span', { class: 'ticket-budget muted', title: 'spent / budget', text: budgetLine(t.budget) }) : '',
      // Its pull requests, followed until merged or closed (issue 22); in several repositories,
      // each named as GitHub does (issue 37).
      (t.pull_requests || []).length ? el('span', { class: 'ticket-pulls' }, t.pull_requests.map((p, _, all) =>
        el('span', { class: `ticket-pull ${p.state}`, title: p.url || '',
          text: `PR ${all.some((o) => o.repo !== p.repo) ? p.repo : ''}#${p.number} ${p.state}` }))) : '',
      el('span', { class: 'ticket-when' }, when(t.updated_at)));
    const r = t.request;
    // Who asked, where, and the way there: outside the button, so the link is a link.
    const origin = r ? el('p', { class: 'ticket-origin muted' }, `asked by ${r.actor || 'someone'} ${threadLabel(r.thread)}`,
      r.url ? ' · ' : '', r.url ? el('a', { href: r.url, target: '_blank', rel: 'noopener noreferrer', text: 'discussion' }) : '') : '';
    const li = el('li', { 'data-ticket': t.id, 'data-stage': t.stage }, head, origin);
    if (open && detail) li.append(detail);
    return li;
  });
  list.replaceChildren(...items);
  for (const id of state.open) loadDetail(id);
}

async function toggle(id) {
  if (state.open.has(id)) {
    state.open.delete(id);
    renderTickets();
  } else {
    state.open.add(id);
    renderTickets();
  }
}

async function showTicket(id, behavior = 'smooth') {
  if (!state.tickets.some((t) => t.id === id)) { state.stage = ''; await loadTickets(); }
  state.open.add(id);
  renderTickets();
  document.querySelector(`#tickets li[data-ticket="${id}"]`)?.scrollIntoView({ block: 'start', behavior });
}

async function loadDetail(id) {
  let d;
  try { d = await getJson(`/api/tickets/${id}`); } catch { return; }
  const li = document.querySelector(`#tickets li[data-ticket="${id}"]`);
  if (!li || !state.open.has(id)) return;
  const node = renderDetail(d);
  const old = li.querySelector('.detail');
  if (old) old.replaceWith(node); else li.append(node);
}

function renderDetail(t) {
  const m = t.mandate;
  const r = t.request;
  const parts = [];
  parts.push(kv([
    ['Request', r ? el('span', {}, `${r.actor || r.source}: `, r.text.length > 300 ? `${r.text.slice(0, 300)}…` : r.text, r.url ? ' ' : '', r.url ? el('a', { href: r.url, target: '_blank', rel: 'noopener noreferrer', text: 'open' }) : '') : undefined],
    ['Thread', t.thread],
    ['Discussed in', t.threads && t.threads.length > 1 ? t.threads.join(', ') : undefined],
    ['Mandate', m ? `${m.strength} via ${m.admission}${m.sender ? `, from ${m.sender}` : ''}, policy v${m.policy_version}${m.matched_rules.length ? `, rules: ${m.matched_rules.join(', ')}` : ''}` : '—'],
    // Issue 37: the repositories it may change, in the order their pull requests merge.
    ['Repositories', m && m.repos && m.repos.length ? m.repos.join(' → ') : undefined],
    ['Mandate status', m ? (m.status === 'active' ? 'active' : `${m.status}${m.ended ? ` by ${m.ended.by || '?'} — ${m.ended.reason}` : ''}`) : undefined],
    ['Ended', t.end_reason || undefined],
  ]));
  if (t.question) parts.push(el('p', { class: 'attention' }, `Waiting for ${t.question.actor}: ${t.question.question}`));
  parts.push(el('h4', { text: 'Decisions' }), el('ul', { class: 'transcript' }, t.decisions.map((d) => el('li', {},
    el('span', { class: 'who' }, when(d.at)),
    el('span', { class: 'text' }, `${d.outcome}${d.would_accept ? ' (would accept)' : ''} · ${d.strength} · ${d.reason}`)))));
  parts.push(el('h4', { text: 'Assignments' }), t.assignments.length
    ? el('ul', { class: 'transcript' }, t.assignments.map((a) => el('li', {}, el('span', { class: 'who', text: a.executor }), el('span', { class: 'text', text: `${a.state} · created ${new Date(a.created_at).toLocaleString()}` }))))
    : el('p', { class: 'muted', text: 'None.' }));
  parts.push(el('h4', { text: 'Messages sent' }), t.messages.length
    ? el('ul', { class: 'transcript' }, t.messages.map((msg) => el('li', {}, el('span', { class: 'who', text: `${msg.kind} · ${msg.status}` }), el('span', { class: 'text', text: msg.body }))))
    : el('p', { class: 'muted', text: 'None.' }));
  parts.push(el('h4', { text: 'Transcript' }), el('ul', { class: 'transcript' }, t.transcript.map((e) => el('li', { class: e.type === 'stage' ? 'stage-change' : '' },
    el('span', { class: 'who' }, e.who || '', ' · ', when(e.at)),
    el('span', { class: 'text', text: e.type === 'stage' ? `→ ${stageLabel(e.kind)}: ${e.text}` : `${e.type === 'sent' ? `[${e.kind}, ${e.state}] ` : e.kind !== 'trigger' && e.kind !== 'answer' ? `[${e.kind}] ` : ''}${e.text}` })))));
  if (t.commands.length) {
    parts.push(el('h4', { text: 'Commands' }), el('ul', { class: 'transcript' }, t.commands.map((c) => el('li', {},
      el('span', { class: 'who' }, when(c.at)), el('span', { class: 'text', text: `${c.command} by ${c.who}` })))));
  }
  if (t.stoppable) {
    parts.push(el('div', { class: 'row' }, el('button', { type: 'button', class: 'danger small stop-button', text: 'Stop…', onclick: () => askStop(t) })));
  }
  return el('div', { class: 'detail' }, parts);
}

// ---------------------------------------------------------------------------------------------
// Stop: a command, confirmed first, recorded as a human stop.

let stopTarget = null;
function askStop(t) {
  stopTarget = t;
  $('stop-title').textContent = `Stop Ticket #${t.id}?`;
  $('stop-what').textContent = t.scope;
  $('stop-name').value = savedName();
  $('stop-name').closest('label').hidden = usesToken();
  $('stop-error').textContent = '';
  $('stop-dialog').showModal();
}

async function confirmStop(ev) {
  if (ev.submitter?.value !== 'stop' || !stopTarget) return;  // Cancel closes the dialog
  ev.preventDefault();
  const button = $('stop-confirm');
  button.disabled = true;
  const name = $('stop-name').value;
  rememberName(name);
  const r = await command(`/api/tickets/${stopTarget.id}/stop`, { confirm: true, name });
  button.disabled = false;
  if (!r.ok) { $('stop-error').textContent = r.body.error || `HTTP ${r.status}`; return; }
  announce(`Ticket #${stopTarget.id} stopped by ${r.body.by}.`);
  $('stop-dialog').close();
  stopTarget = null;
  refresh();
}

// ---------------------------------------------------------------------------------------------
// Observe review

function renderObserve(o, mode) {
  const section = $('observe');
  // Nothing to review, nothing shown.
  section.hidden = !o.decisions.length;
  $('observe-intro').textContent = `Inferred requests the agent would have taken in auto mode (now: ${mode}), with the evidence and the rules they matched. Judge them before switching to auto.`;
  $('observe-list').replaceChildren(...o.decisions.map((d) => {
    const a = d.assessment || {};
    const candidates = d.triggers.filter((t) => t.gate.candidate);
    return el('li', { class: 'card', 'data-decision': d.id },
      el('div', { class: 'meta muted' }, `Would accept · ${d.thread} · `, when(d.at), ` · policy v${d.policy_version}`),
      candidates.map((t) => el('blockquote', {}, `${t.actor || t.source}: ${t.text}`)),
      a.scope ? el('p', {}, el('strong', { text: 'Would do: ' }), a.scope) : '',
      a.evidence ? el('p', {}, el('strong', { text: 'Evidence: ' }), `“${a.evidence}”`) : '',
      el('p', {}, el('strong', { text: 'Rules matched: ' }), d.matched_rules.length ? d.matched_rules.map((r) => el('span', { class: 'rule', text: r })) : 'none'),
      el('p', { class: 'muted', text: `Recorded as ${d.outcome}: ${d.reason}` }),
      candidates[0] ? el('button', { type: 'button', class: 'ghost', text: 'Explain', onclick: () => explain(candidates[0].id) }) : '');
  }));
}

// ---------------------------------------------------------------------------------------------
// Explain

async function explain(q) {
  $('explain-q').value = q;
  const summary = $('explain-summary');
  summary.className = '';
  try {
    const story = await getJson(`/api/explain?q=${encodeURIComponent(q)}`);
    // One sentence per line, in a person's words (issue 24); the record stays under Details.
    summary.replaceChildren(...(story.told || [story.summary]).map((line) =>
      el('p', { class: line.startsWith('To change that:') ? 'explain-change' : '', text: line })));
    $('explain-story').textContent = JSON.stringify(story, null, 2);
    $('explain-details').hidden = false;
  } catch (e) {
    summary.textContent = e.message;
    summary.className = 'bad-text';
    $('explain-details').hidden = true;
  }
  $('explain').scrollIntoView({ block: 'start', behavior: 'smooth' });
}

// ---------------------------------------------------------------------------------------------
// Refreshing

let running = false;
let liveState = 'connecting';
let again = false;
async function refresh() {
  if (running) { again = true; return; }
  running = true;
  try {
    do {
      again = false;
      const [needs, status, observe] = await Promise.all([getJson('/api/needs'), getJson('/api/status'), getJson('/api/observe?limit=20')]);
      renderNeeds(needs);
      renderStatus(status);
      renderRepoChips(status.repositories || []);
      renderObserve(observe, status.mode);
      await refreshWorkers();
      await refreshJudgement();
      await loadTickets();
      await refreshIntercom();
      state.loggedOut = false;
      $('login-needed').hidden = true;
      document.body.dataset.loaded = String(Date.now());
      if (liveState === 'live' && $('live').classList.contains('off')) setLive('on', 'live');
    } while (again);
  } catch (e) {
    // A status means the daemon answered with an error (its store unreadable, say): say that.
    const why = e.status ? `the daemon cannot answer: ${e.message}` : `cannot reach the daemon (${e.message})`;
    setLive('off', e.status === 401 ? 'not logged in' : why);
  } finally {
    running = false;
  }
}

function setLive(kind, text) {
  // Logged out, the stream and every read fail the same way: say the one thing that helps.
  if (state.loggedOut && kind === 'off') text = 'not logged in';
  const node = $('live');
  node.className = `live ${kind}`;
  node.textContent = text;
}

function announce(text) {
  const node = $('reload-result');
  if (!node) return;
  setLive('on', text);
  setTimeout(() => setLive('on', 'live'), 6000);
}

// ---------------------------------------------------------------------------------------------
// Theme: auto (system) → light → dark.

const themeKey = 'superagent.theme';
function applyTheme(theme) {
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  $('theme').textContent = `Theme: ${theme || 'auto'}`;
}

function init() {
  applyTheme(localStorage.getItem(themeKey));
  $('theme').addEventListener('click', () => {
    const next = { '': 'light', light: 'dark', dark: '' }[localStorage.getItem(themeKey) || ''];
    if (next) localStorage.setItem(themeKey, next); else localStorage.removeItem(themeKey);
    applyTheme(next);
  });
  $('reload-policy').addEventListener('click', reloadPolicy);
  $('tickets-more').addEventListener('click', () => loadTickets(true));
  $('stop-form').addEventListener('submit', confirmStop);
  $('explain-form').addEventListener('submit', (ev) => { ev.preventDefault(); explain($('explain-q').value.trim()); });
  initIntercom({ savedName, rememberName, usesToken, announce, onChanged: refresh });
  initWorkers({ savedName, rememberName, usesToken, announce, onChanged: refresh, showTicket: (id) => showTicket(id).catch(() => {}) });
  whenLoggedOut(() => {
    state.loggedOut = true;
    $('login-needed').hidden = false;
    setLive('off', 'not logged in');
  });

  // A check run on GitHub links "<panel.public_url>/#ticket-<N>" (issue 25): open that Ticket.
  const openLinkedTicket = () => {
    const m = /^#ticket-(\d{1,15})$/.exec(window.location.hash);
    if (m) showTicket(Number(m[1]), 'instant').catch(() => {});
  };
  window.addEventListener('hashchange', openLinkedTicket);
  loadSession().catch(() => {}).finally(() => {
    refresh().then(openLinkedTicket);
    live({
      onChange: refresh,
      onHello: async (hello) => {
        // A restarted daemon has a new CSRF token.
        if (state.bootId && hello.boot_id !== state.bootId) await loadSession().catch(() => {});
        state.bootId = hello.boot_id;
      },
      onState: (s) => (liveState = s, setLive(s === 'live' ? 'on' : 'off', { live: 'live', reconnecting: 'reconnecting…', polling: 'updates paused, retrying' }[s])),
    });
  });
  setInterval(() => refreshTimes(), 30_000);
  setInterval(refresh, 5 * 60_000);  // a safety net; live updates do the real work
}

init();
