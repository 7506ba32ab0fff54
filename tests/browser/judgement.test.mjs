// Judgement you can measure (issue 38) in a real browser: headless Debian Chromium driven by
// playwright-core, against a panel that tests/panel_verdicts_test.cpp started in-process over a
// store where the real Eval recorded would_accept Decisions under a rule named "<b>x</b>" (three
// answered yes: its promotion is proposed) and one named "错别字", and one explicit Ticket. Run
// by that C++ test, which passes the environment below; by hand:
//   PANEL_URL=… LOGIN_URL=… POLICY_FILE=… node --test tests/browser/judgement.test.mjs
// No fixed sleeps: every wait is for a condition in the page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium, newPage } from './chromium.mjs';

const url = process.env.PANEL_URL;
const login = process.env.LOGIN_URL;
const policyFile = process.env.POLICY_FILE;
const shots = process.env.SCREENSHOT_DIR || '/tmp/superagent-panel-screenshots';
for (const [k, v] of Object.entries({ PANEL_URL: url, LOGIN_URL: login, POLICY_FILE: policyFile })) {
  if (!v) throw new Error(`${k} is not set (tests/panel_verdicts_test.cpp sets it)`);
}
mkdirSync(shots, { recursive: true });

const markup = '<b>x</b>';
const chinese = '错别字';

let browser;
let page;
const errors = [];

before(async () => {
  browser = await launchChromium();
  // The panel runs no intercom here: /api/intercom's 503 is expected.
  page = await newPage(browser, errors);
  await page.goto(login);
  assert.equal(page.url(), url, 'the login link redirects to the panel');
  await page.locator('body[data-loaded]').waitFor();
});

after(async () => {
  await browser?.close();
  assert.deepEqual(errors, [], 'the page logged no errors');
});

// The cells of the rule's row, as text.
async function rowCells(rule) {
  const row = page.locator('#judgement-rules tr').filter({ has: page.locator('td:first-child', { hasText: rule }) });
  await row.waitFor({ state: 'visible' });
  return row.locator('td').allTextContents();
}

test('the Judgement table has a row per rule, a name that looks like markup shown as text', async () => {
  await page.locator('#judgement').waitFor({ state: 'visible' });
  const headers = await page.locator('#judgement thead th').allTextContents();
  assert.deepEqual(headers, ['Rule', 'Mode', 'Would accept', 'Accepted', 'Yes', 'No', "Don't know", 'Unanswered', 'Missed',
    'Precision', 'At least']);
  assert.deepEqual(await rowCells(markup), [markup, 'observe', '3', '0', '3', '0', '0', '0', '0', '100 %', '44 %']);
  assert.deepEqual(await rowCells(chinese), [chinese, 'observe', '1', '0', '0', '0', '0', '1', '0', '—', '—']);
  assert.equal(await page.locator('main b').count(), 0, 'no <b> element: the name is text');
  assert.match(await page.locator('#judgement-summary').textContent(),
    /^Over the last 14 days\. A rule earns auto once its lower bound reaches 20 % over at least 3 yes\/no answers;/);
});

test('the weekly card says the week in one line', async () => {
  const card = page.locator('#week-card');
  await card.waitFor({ state: 'visible' });
  assert.match(await card.textContent(), /^This week: 1 Ticket — .*; 4 would-have-acted, 3 verdicts given\.$/);
});

test('Needs you proposes the policy edit, shows its diff as text and edits nothing', async () => {
  const card = page.locator('#mode-proposals-slot article.mode-proposal');
  await card.waitFor({ state: 'visible' });
  assert.equal(await card.count(), 1);
  assert.equal(await card.getAttribute('data-rule'), markup);
  assert.equal(await card.getAttribute('data-proposal'), 'promote');
  assert.equal(await card.locator('.meta .rule').textContent(), markup);
  assert.equal(await card.locator('strong').first().textContent(), 'The rule <b>x</b> has earned auto mode.');
  assert.equal(await card.locator('.proposal-figures').textContent(),
    "3 yes, 0 no, 0 don't know, 0 missed; precision 100 % (at least 44 % with 95 % confidence) over 3 answers.");
  assert.match(await card.locator('pre.proposal-diff').textContent(), /auto/);
  assert.equal(await card.locator('.proposal-file code').textContent(), policyFile);
  assert.match(await card.locator('.fix').textContent(), /^Edit policy\.yaml yourself; the daemon never edits it\./);
  assert.equal(await card.locator('button, form, input').count(), 0, 'nothing on the card edits anything');
  assert.equal(await page.locator('#needs b').count(), 0);
  assert.match(await page.locator('#needs-h').textContent(), /^Needs you \(\d+\)$/);
  await card.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, 'judgement-1280x800-light.png'), fullPage: true });
});
