// Judgement you can measure (issue 38), under Status: the week in one quiet line, each rule's
// record (its counts, precision and the 95 % lower bound that earns or loses auto), and in Needs
// you one card per policy edit the records earn. A card shows the edit as a diff and says a person
// makes it: nothing here edits the policy, and the daemon never does.
// Read with the rest of the page, from panel.js's refresh. Rule names, diffs and file paths are
// the policy author's text: shown through textContent only (dom.js).
import { getJson } from './api.js';
import { $, el } from './dom.js';

const percent = (fraction) => `${Math.round(fraction * 100)} %`;
const count = (n) => String(n ?? 0);

// The week in one line, made by the daemon (its words, times in s/min/h); one line also when
// nothing happened.
function renderWeek(week) {
  $('week-card').textContent = week.words;
  $('week-card').hidden = false;
}

function renderRules(j) {
  const s = j.settings;
  $('judgement').hidden = false;
  $('judgement-summary').textContent =
    `Over the last ${j.window_days} day${j.window_days === 1 ? '' : 's'}. A rule earns auto once its lower bound reaches ` +
    `${percent(s.promote_at)} over at least ${s.promote_after} yes/no answers; one in auto goes back to observe under ` +
    `${percent(s.demote_at)} over at least ${s.demote_after}. The panel proposes the edit; a person makes it.`;
  $('judgement-empty').hidden = j.rules.length > 0;
  $('judgement-table').hidden = j.rules.length === 0;
  $('judgement-rules').replaceChildren(...j.rules.map((r) => {
    const answered = (r.yes ?? 0) + (r.no ?? 0) > 0;
    return el('tr', { 'data-rule': r.rule, title: r.words },
      el('td', {}, el('span', { class: 'rule', text: r.rule })),
      el('td', { class: 'rule-mode', text: r.mode }),
      el('td', { text: count(r.would_accept) }),
      el('td', { text: count(r.accepted) }),
      el('td', { text: count(r.yes) }),
      el('td', { text: count(r.no) }),
      el('td', { text: count(r.unknown) }),
      el('td', { text: count(r.unanswered) }),
      el('td', { text: count(r.missed) }),
      el('td', { class: 'precision', text: answered ? percent(r.precision) : '—' }),
      el('td', { class: 'lower-bound', text: answered ? percent(r.lower_bound) : '—' }));
  }));
}

// One card per proposed policy edit: the rule, its figures, the diff, the file. No button: the
// edit is a person's, in their editor.
export function renderProposals(cards) {
  $('mode-proposals-slot').replaceChildren(...cards.map((c) => el('article', {
    class: 'attention mode-proposal', 'data-rule': c.rule, 'data-proposal': c.proposal },
  el('div', { class: 'meta' }, el('span', { class: 'problem-kind', text: 'policy edit proposed' }), ' · rule ',
    el('span', { class: 'rule', text: c.rule }), ` · ${c.from} → ${c.to}`),
  el('p', {}, el('strong', { text: c.what })),
  el('p', { class: 'muted proposal-figures',
    text: `${c.yes} yes, ${c.no} no, ${c.unknown} don't know, ${c.missed} missed; ${c.precision_words}.` }),
  c.why ? el('p', { class: 'proposal-why', text: c.why }) : '',
  c.file ? el('p', { class: 'muted proposal-file' }, 'In ', el('code', { text: c.file })) : '',
  c.diff ? el('pre', { class: 'proposal-diff', text: c.diff }) : '',
  el('p', { class: 'fix', text: c.fix }),
  )));
}

// Read with the rest of the page (panel.js's refresh); Needs-you's proposal cards come with
// /api/needs, which panel.js reads and hands to renderProposals.
export async function refreshJudgement() {
  const judgement = await getJson('/api/judgement');
  renderWeek(judgement.week);
  renderRules(judgement);
}
