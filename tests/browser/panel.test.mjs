// The panel in a real browser: headless Debian Chromium driven by playwright-core, against a
// real `superagent serve` that tests/panel_browser_test.cpp started on seeded state. Run by that
// C++ test (which passes the environment below); by hand:
//   PANEL_URL=… SUPERAGENT_BIN=… SUPERAGENT_CONFIG=… PANEL_POLICY_FILE=… PANEL_SEED='{…}' \
//     node --test tests/browser/panel.test.mjs
// No fixed sleeps: every wait is for a condition in the page or the API.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium, newPage } from './chromium.mjs';

const url = process.env.PANEL_URL;
const bin = process.env.SUPERAGENT_BIN;
const config = process.env.SUPERAGENT_CONFIG;
const policyFile = process.env.PANEL_POLICY_FILE;
const seed = JSON.parse(process.env.PANEL_SEED || '{}');
const shots = process.env.SCREENSHOT_DIR || '/tmp/superagent-panel-screenshots';
for (const [k, v] of Object.entries({ PANEL_URL: url, EMPTY_PANEL_URL: process.env.EMPTY_PANEL_URL, EMPTY_SUPERAGENT_CONFIG: process.env.EMPTY_SUPERAGENT_CONFIG, SUPERAGENT_BIN: bin, SUPERAGENT_CONFIG: config, PANEL_POLICY_FILE: policyFile })) {
  if (!v) throw new Error(`${k} is not set (tests/panel_browser_test.cpp sets it)`);
}
mkdirSync(shots, { recursive: true });

let browser;
let page;

// The one-click login link, as a person gets it: `superagent panel-url --config …`.
function loginUrl(cfg) {
  const r = spawnSync(bin, ['panel-url', '--config', cfg], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^http:\/\/127\.0\.0\.1:\d+\/login\?token=[0-9a-f]{64}\n$/);
  return r.stdout.trim();
}

// A browser that opened the login link: it lands on the panel, the token gone from the address bar.
async function openPanel(options = {}, at = url, cfg = config) {
  const errors = [];
  const p = await newPage(browser, errors, 10_000, options);
  p.errors = errors;
  await p.goto(loginUrl(cfg));
  assert.equal(p.url(), at, 'the login link redirects to the panel');
  await p.locator('#live.on').waitFor();             // the live-update stream said hello
  await p.locator('body[data-loaded]').waitFor();     // and the first refresh rendered
  return p;
}

const api = async (path) => (await page.request.get(new URL(path, url).href)).json();

before(async () => {
  browser = await launchChromium();
  page = await openPanel();
});

after(async () => {
  const errors = page?.errors ?? [];
  await browser?.close();
  assert.deepEqual(errors, [], 'the page logged no errors');
});

test('the page shows what needs a person first: the oldest question, then decisions, then problems', async () => {
  const sections = await page.$$eval('main > section', (all) => all.map((s) => s.id));
  assert.deepEqual(sections.slice(0, 3), ['needs', 'status', 'history']);
  // Two questions, one blocked Ticket, the seeded Source problem, and whatever the daemon itself
  // raises (without a GitHub channel its acknowledgements cannot be delivered).
  assert.match(await page.locator('#needs-h').textContent(), /^Needs you \((\d+)\)$/);
  const card = page.locator('#question-slot .question-card');
  assert.equal(await card.getAttribute('data-ticket'), String(seed.question_old));
  assert.match(await card.textContent(), /Which link should CONTRIBUTING\.md point to\?/);
  assert.equal(await card.locator('.more').textContent(), '2 more questions waiting after this one.');
  // Who is asked, and where.
  assert.match(await card.locator('.meta').first().textContent(), /asked of alice on GitHub issue acme\/widgets#11/);
  const blocked = page.locator(`#decisions-slot article[data-ticket="${seed.blocked}"]`);
  assert.equal(await blocked.count(), 1);
  // Each card carries what a person needs to act on it (issue 24): why, who asked for what, where.
  assert.match(await blocked.innerText(), /Why: the CI badge URL needs a token nobody gave/);
  assert.match(await blocked.locator('.request-quote').innerText(), /@agent please update the CI badge in README/);
  assert.match(await blocked.locator('.request-context a').getAttribute('href'), /^https:\/\/github\.com\//);
  assert.match(await card.locator('.request-context').innerText(), /Asked for by alice on GitHub issue acme\/widgets#11/);
  // A History row says who asked, where, and links there.
  const origin = page.locator(`#tickets li[data-ticket="${seed.blocked}"] .ticket-origin`);
  assert.match(await origin.innerText(), /asked by alice on GitHub issue acme\/widgets#13 · discussion/);
  const causes = await page.locator('#problems-slot article').evaluateAll((all) => all.map((a) => a.dataset.cause));
  assert.ok(causes.includes('feishu'), causes.join());
  assert.match(await page.locator('#problems-slot article[data-cause="feishu"]').innerText(), /Feishu: reading backfill failing/);
  // This daemon has no Source and no repository: Needs-you says so first, with what to set.
  const pieces = await page.locator('#setup-slot article').evaluateAll((all) => all.map((a) => a.dataset.piece));
  assert.ok(pieces.includes('sources') && pieces.includes('execution'), pieces.join());
  assert.match(await page.locator('#setup-slot article[data-piece="sources"]').innerText(), /Nothing reaches the daemon[\s\S]*superagent init/);
  // Status says honestly that nothing executes yet.
  assert.match(await page.locator('#status-list').textContent(), /0 of 3 in use \(\+1 kept for people\) · execution is off: no git remote/);
  assert.match(await page.locator('#sources').textContent(), /HTTP 503 from open\.feishu\.cn/);
  await page.screenshot({ path: join(shots, 'needs-1280x800-light.png') });
});

test('a set-aside item is a card with what and why, and Retry puts it back to work', async () => {
  const card = page.locator(`#set-aside-slot article.set-aside[data-kind="turn"][data-item="${seed.set_aside}"]`);
  await card.waitFor();
  const text = (await card.innerText()).replace(/\s+/g, ' ');
  assert.match(text, /set aside · since/);
  assert.match(text, new RegExp(`worker turns of Ticket ${seed.set_aside} \\(.*README.*\\)`));
  assert.match(text, /failed the same way 5 times in a row: model answer unreadable: type_error\.316/);
  await card.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, 'set-aside-1280x800-light.png') });
  await card.getByRole('button', { name: 'Retry' }).click();
  await card.waitFor({ state: 'detached' });
  const needs = await api('/api/needs');
  assert.deepEqual(needs.set_aside, [], 'nothing is set aside any more');
  const t = await api(`/api/tickets/${seed.set_aside}`);
  assert.equal(t.stage, 'idle', 'the Ticket is back to work');
});

// The question form (issue 22): numbered options as radio buttons, a free-text box only when the
// form takes words, who is asked and where; each answer in place, a refusal shown in place.
test('questions are answered in place: a choice, words, and a refusal shown where it happened', async () => {
  let card = page.locator('#question-slot .question-card');
  // 1. A choice. The question names the radio group; its options are numbered; words are "Other".
  const group = card.getByRole('group', { name: 'Which link should CONTRIBUTING.md point to?' });
  assert.equal(await group.getByRole('radio').count(), 3, 'two options and Other');
  assert.equal(await card.getByLabel('Other answer').count(), 1);
  await card.getByLabel('docs/setup.md').check();
  await card.getByLabel('Your name').fill('Tess');
  await card.getByRole('button', { name: 'Send answer' }).click();
  await page.locator(`#question-slot .question-card[data-ticket="${seed.question_new}"]`).waitFor();
  let t = await api(`/api/tickets/${seed.question_old}`);
  assert.equal(t.stage, 'idle');
  assert.equal(t.commands[0].command, 'answer');
  assert.equal(t.commands[0].who, 'Tess (panel)');
  assert.deepEqual(t.commands[0].detail, { option: 1, text: 'docs/setup.md' });
  assert.equal(t.transcript.find((e) => e.kind === 'answer' && e.type === 'input').text, 'Tess (panel) chose 1. docs/setup.md');
  // The discussion is told, in one line, who answered what.
  assert.equal(t.transcript.find((e) => e.kind === 'answer' && e.type === 'sent').text, 'Tess answered in the panel: docs/setup.md');

  // 2. Words: a free-text question has only a text box, and no radio buttons.
  card = page.locator(`#question-slot .question-card[data-ticket="${seed.question_new}"]`);
  assert.equal(await card.getByRole('radio').count(), 0);
  assert.match(await card.locator('.meta').first().textContent(), /asked of alice on GitHub issue acme\/widgets#12/);
  await card.getByLabel('Your answer').fill('是的，请写上：不再支持 Python 3.8 🐍');
  await card.getByRole('button', { name: 'Send answer' }).click();
  card = page.locator(`#question-slot .question-card[data-ticket="${seed.question_zh}"]`);
  await card.waitFor();
  t = await api(`/api/tickets/${seed.question_new}`);
  assert.equal(t.stage, 'idle');
  assert.equal(t.transcript.find((e) => e.kind === 'answer' && e.type === 'input').text, 'Tess (panel) answered: 是的，请写上：不再支持 Python 3.8 🐍');
  assert.equal(await page.locator('#question-slot .more').textContent(), '');

  // 3. Chinese and emoji options, asked of bob; it must read right at every width and theme.
  assert.match(await card.locator('.meta').first().textContent(), /Ticket #\d+ · asked of bob on GitHub issue acme\/widgets#17/);
  assert.equal(await card.getByRole('radio').count(), 4);
  await card.scrollIntoViewIfNeeded();
  await card.screenshot({ path: join(shots, 'question-form-1280-light.png') });
  for (const [width, height, colorScheme] of [[390, 844, 'light'], [390, 844, 'dark'], [1280, 800, 'dark']]) {
    await page.setViewportSize({ width, height });
    await page.emulateMedia({ colorScheme });
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no sideways scrolling at ${width}px (overflow ${overflow}px)`);
    await card.screenshot({ path: join(shots, `question-form-${width}-${colorScheme}.png`) });
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.emulateMedia({ colorScheme: 'light' });

  // A refusal is the daemon's precise words, shown in the card, and the card stays for a retry.
  await card.getByLabel('Other answer').fill('   ');
  assert.equal(await card.getByRole('radio', { name: 'Other' }).isChecked(), true, 'typing chooses Other');
  await card.getByRole('button', { name: 'Send answer' }).click();
  await card.locator('.error', { hasText: 'the answer is empty' }).waitFor();
  assert.equal(await card.getByRole('alert').textContent(), 'the answer is empty');
  await card.screenshot({ path: join(shots, 'question-form-refused-1280-light.png') });
  assert.equal((await api(`/api/tickets/${seed.question_zh}`)).stage, 'waiting_for_person', 'the refusal changed nothing');

  // By keyboard: the first option takes focus, the arrow moves to the second, Enter sends.
  await card.getByLabel('docs/安装指南.md').focus();
  await page.keyboard.press('ArrowDown');
  assert.equal(await card.getByLabel('维基页面 📚').isChecked(), true);
  await page.keyboard.press('Enter');
  await card.waitFor({ state: 'detached' });
  t = await api(`/api/tickets/${seed.question_zh}`);
  assert.equal(t.stage, 'idle');
  assert.equal(t.transcript.find((e) => e.kind === 'answer' && e.type === 'input').text, 'Tess (panel) chose 2. 维基页面 📚');
  assert.equal(t.transcript.find((e) => e.kind === 'answer' && e.type === 'sent').text, 'Tess answered in the panel: 维基页面 📚');
  // The Ticket's detail shows the answer as words.
  await showDetail(seed.question_zh);
  await page.locator(`#tickets li[data-ticket="${seed.question_zh}"] .detail .transcript`, { hasText: 'Tess (panel) chose 2. 维基页面 📚' }).waitFor();
});

async function showDetail(id) {
  const row = page.locator(`#tickets li[data-ticket="${id}"]`);
  await row.locator('.ticket-head').click();
  await row.locator('.detail').waitFor();
}

test('Stop asks for confirmation, then is recorded as a human stop', async () => {
  const blocked = page.locator(`#decisions-slot article[data-ticket="${seed.blocked}"]`);
  await blocked.getByRole('button', { name: 'Stop…' }).click();
  const dialog = page.locator('#stop-dialog');
  await dialog.waitFor({ state: 'visible' });
  assert.equal(await page.locator('#stop-title').textContent(), `Stop Ticket #${seed.blocked}?`);
  await page.screenshot({ path: join(shots, 'stop-confirm-1280x800-light.png') });
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'hidden' });
  let t = await api(`/api/tickets/${seed.blocked}`);
  assert.equal(t.stage, 'blocked', 'Cancel changes nothing');
  assert.equal(t.commands.length, 0);

  await blocked.getByRole('button', { name: 'Stop…' }).click();
  assert.equal(await page.locator('#stop-name').inputValue(), 'Tess', 'the name is remembered');
  await dialog.getByRole('button', { name: 'Stop Ticket' }).click();
  await dialog.waitFor({ state: 'hidden' });
  await blocked.waitFor({ state: 'detached' });  // no longer a decision to make
  t = await api(`/api/tickets/${seed.blocked}`);
  assert.equal(t.stage, 'ended');
  assert.equal(t.end_reason, 'stopped by Tess (panel)');
  assert.equal(t.mandate.status, 'withdrawn');
  assert.equal(t.mandate.ended.by, 'Tess (panel)');
  // History shows it ended.
  await page.locator(`#tickets li[data-ticket="${seed.blocked}"][data-stage="ended"]`).waitFor();
});

test('observe review shows what would have been accepted, with evidence and matched rules', async () => {
  const section = page.locator('#observe');
  await section.waitFor({ state: 'visible' });
  const card = section.locator('.card').first();
  const text = await card.textContent();
  assert.match(text, /the README heading says 'Instalation'/);
  assert.match(text, /Evidence: “says 'Instalation'”/);
  assert.equal(await card.locator('.rule').allTextContents().then((r) => r.join(',')), 'wording');
  await card.getByRole('button', { name: 'Explain' }).click();
  await page.locator('#explain-summary', { hasText: 'The Eval would have accepted it, but the policy is in observe mode' }).waitFor();
  // It says which key would change that, in its own line.
  await page.locator('#explain-summary .explain-change', { hasText: 'To change that: mode — auto' }).waitFor();
});

test('explain tells a message’s whole story from its link', async () => {
  await page.locator('#explain-q').fill('https://github.com/o/r/issues/11#gh:comment:1001');
  await page.locator('#explain-form button').click();
  await page.locator('#explain-summary', { hasText: 'It created Ticket' }).waitFor();
  await page.locator('#explain-q').fill('https://github.com/o/r/issues/404#nothing');
  await page.locator('#explain-form button').click();
  await page.locator('#explain-summary', { hasText: 'was ever received' }).waitFor();
});

test('a check run’s link to a Ticket opens that Ticket in the panel', async () => {
  // GitHub's check run links "<panel.public_url>/#ticket-N" (issue 25): opened fresh, and followed
  // from a panel already open.
  const p = await openPanel();
  const fresh = await p.context().newPage();
  await fresh.goto(new URL(`/#ticket-${seed.question_old}`, url).href);
  await fresh.locator(`#tickets li[data-ticket="${seed.question_old}"] .detail`).waitFor();
  // Scrolled to it: the person sees the Ticket, not the top of the page.
  await fresh.waitForFunction((id) => {
    const top = document.querySelector(`#tickets li[data-ticket="${id}"]`)?.getBoundingClientRect().top;
    return top !== undefined && top > -2 && top < window.innerHeight / 2;  // sub-pixel: -0.09 is the top
  }, seed.question_old);
  await fresh.screenshot({ path: join(shots, 'ticket-link-1280x800-light.png') });
  await p.goto(new URL(`/#ticket-${seed.set_aside}`, url).href);
  await p.locator(`#tickets li[data-ticket="${seed.set_aside}"] .detail`).waitFor();
  await p.goto(new URL('/#ticket-99999999', url).href);  // a Ticket that does not exist: nothing breaks
  await p.goto(new URL('/#ticket-<img src=x onerror=alert(1)>', url).href);
  assert.deepEqual(p.errors, []);
  await p.context().close();
});

test('a new Trigger shows up live, without reloading the page', async () => {
  await page.evaluate(() => { window.__sameDocument = true; });
  const trigger = {
    id: 'gh:comment:2001', source: 'github', scope: 'comments', actor: 'alice', human: true, addressed: true,
    text: '@agent please add a CHANGELOG entry for the panel', at: new Date().toISOString(),
    threads: ['github:acme/widgets:issue:31'], channel: 'github:acme/widgets:issue:31',
    meta: { html_url: 'https://github.com/o/r/issues/31#issuecomment-2001' },
  };
  const r = spawnSync(bin, ['receive', '--config', config, '--trigger', '-'], { input: JSON.stringify(trigger), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).outcome, 'stored');
  // The daemon's Eval accepts it; the store changes; the stream says so; the page refreshes.
  const row = page.locator('#tickets li', { hasText: 'add a CHANGELOG entry for the panel' });
  await row.waitFor();
  assert.equal(await page.evaluate(() => window.__sameDocument), true);
  await row.locator('.ticket-head').click();
  await row.locator('.detail', { hasText: 'explicit via allow_listed_addressed, from alice' }).waitFor();
  await page.screenshot({ path: join(shots, 'history-1280x800-light.png'), fullPage: true });
});

test('reload policy shows the validation result', async () => {
  const original = readFileSync(policyFile, 'utf8');
  try {
    writeFileSync(policyFile, 'mode: sometimes\n');
    await page.getByRole('button', { name: 'Reload policy' }).click();
    await page.locator('#reload-result', { hasText: 'stays in force' }).waitFor();
    assert.match(await page.locator('#reload-problems').textContent(), /policy\.yaml:1:\d+: mode: must be one of off, observe, auto/);
    // Needs-you keeps saying so after the button's answer is gone: the next start would refuse it.
    const card = page.locator('#policy-file-slot article', { hasText: 'the next start of the daemon will refuse the file' });
    await card.waitFor();
    assert.match(await card.innerText(), /policy\.yaml:1:\d+: mode: must be one of off, observe, auto/);
  } finally {
    writeFileSync(policyFile, original);
  }
  await page.getByRole('button', { name: 'Reload policy' }).click();
  await page.locator('#reload-result', { hasText: 'Policy unchanged (version 1).' }).waitFor();
  assert.equal(await page.locator('#reload-problems').isVisible(), false);
  await page.locator('#policy-file-slot article').waitFor({ state: 'detached' });
});

test('a browser that has not logged in is told how, and its commands change nothing', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  const p = await context.newPage();
  p.setDefaultTimeout(10_000);
  const pageErrors = [];
  p.on('pageerror', (e) => pageErrors.push(String(e)));
  await p.goto(url);  // the page itself loads: its files hold no data
  const banner = p.locator('#login-needed');
  await banner.waitFor();
  assert.match(await banner.innerText(), /Not logged in\. On the daemon's host run superagent panel-url --config … and open the link it prints\./);
  await p.locator('#live', { hasText: 'not logged in' }).waitFor();
  // No data reached the page, and a command sent from it is refused.
  assert.equal(await p.locator('#question-slot').innerText(), '');
  const stop = await p.evaluate(async (ticket) => {
    const r = await fetch(`/api/tickets/${ticket}/stop`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ confirm: true }) });
    return r.status;
  }, seed.ended);
  assert.equal(stop, 401);
  await p.screenshot({ path: join(shots, 'not-logged-in-1280x800-light.png') });
  // A wrong link is refused and says what to do.
  const wrong = await p.goto(new URL('/login?token=' + '0'.repeat(64), url).href);
  assert.equal(wrong.status(), 401);
  assert.match(await p.locator('body').innerText(), /superagent panel-url/);
  // The right one logs this browser in: the banner is gone, the questions are there.
  await p.goto(loginUrl(config));
  await p.locator('body[data-loaded]').waitFor();
  assert.equal(await banner.isVisible(), false);
  assert.equal(p.url(), url);
  const cookies = await context.cookies();
  assert.equal(cookies.length, 1);
  assert.equal(cookies[0].httpOnly, true);
  assert.equal(cookies[0].sameSite, 'Strict');
  assert.deepEqual(pageErrors, []);
  const ticket = await api(`/api/tickets/${seed.ended}`);
  assert.equal(ticket.mandate.status, 'active', 'the refused Stop changed nothing');
  await context.close();
});

test('on a calm day "Needs you" is one line and the rest stays quiet', async () => {
  const p = await openPanel({}, process.env.EMPTY_PANEL_URL, process.env.EMPTY_SUPERAGENT_CONFIG);
  assert.equal((await p.locator('#needs').innerText()).replace(/\s+/g, ' ').trim(), 'Needs you: Nothing needs you.');
  const box = await p.locator('#needs').boundingBox();
  assert.ok(box.height < 60, `one line (${box.height}px)`);
  assert.equal(await p.locator('#observe').isVisible(), false, 'nothing to review, nothing shown');
  assert.equal(await p.locator('#tickets-empty').textContent(), 'No Tickets yet.');
  await p.screenshot({ path: join(shots, 'calm-1280x800-light.png') });
  assert.deepEqual(p.errors, []);
  await p.context().close();
});

test('readable at 1280×800 and at phone width, in light and dark', async () => {
  // One page, re-laid out and re-themed in place: what a person gets when they rotate a phone or
  // the system switches to dark mode at sunset.
  for (const [width, height] of [[1280, 800], [390, 844]]) {
    for (const colorScheme of ['light', 'dark']) {
      await page.setViewportSize({ width, height });
      await page.emulateMedia({ colorScheme });
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
      await page.evaluate(() => window.scrollTo(0, 0));
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `no sideways scrolling at ${width}px (overflow ${overflow}px)`);
      const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      assert.equal(bg === 'rgb(19, 21, 25)', colorScheme === 'dark', `background ${bg} fits the ${colorScheme} theme`);
      await page.screenshot({ path: join(shots, `panel-${width}x${height}-${colorScheme}.png`) });
    }
  }
  await page.screenshot({ path: join(shots, 'panel-390x844-dark-full.png'), fullPage: true });
});
