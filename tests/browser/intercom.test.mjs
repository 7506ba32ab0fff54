// The communication center (SPEC §10) in a real browser, against a real `superagent serve` that
// executes with the command executor on a local git origin (tests/panel_browser_test.cpp starts
// it). A person opens sessions, writes to them, groups and broadcasts, and is refused with the
// reason — text kept — when a session cannot be reached. No fixed sleeps: every wait is for a
// condition in the page, which updates itself from the live-update stream.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium, newPage } from './chromium.mjs';

const url = process.env.PANEL_URL;
const shots = process.env.SCREENSHOT_DIR || '/tmp/superagent-panel-screenshots';
for (const k of ['PANEL_URL', 'SUPERAGENT_BIN', 'SUPERAGENT_CONFIG']) {
  if (!process.env[k]) throw new Error(`${k} is not set (tests/panel_browser_test.cpp sets it)`);
}
mkdirSync(shots, { recursive: true });

let browser;
let page;
const errors = [];
const api = async (path) => (await page.request.get(new URL(path, url).href)).json();

before(async () => {
  browser = await launchChromium();
  // Refusals the test provokes come back as HTTP 409, which Chromium logs as a failed resource.
  page = await newPage(browser, errors, 15_000);
  // Logged in as a person is: the link `superagent panel-url` prints.
  const login = spawnSync(process.env.SUPERAGENT_BIN, ['panel-url', '--config', process.env.SUPERAGENT_CONFIG], { encoding: 'utf8' });
  assert.equal(login.status, 0, login.stderr);
  await page.goto(login.stdout.trim());
  assert.equal(page.url(), url);
  await page.locator('#live.on').waitFor();
  await page.locator('body[data-loaded]').waitFor();
});

after(async () => {
  await browser?.close();
  assert.deepEqual(errors, [], 'the page logged no errors');
});

async function openSession(text) {
  await page.locator('#ic-new-text').fill(text);
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.locator('#ic-new-result', { hasText: 'Requested.' }).waitFor();
  // The Eval accepts it, the scheduler runs its first turn, the page hears of it live.
  const item = page.locator('#ic-live li', { hasText: text });
  await item.locator('.stage', { hasText: 'idle' }).waitFor();
  return item;
}

test('the communication center sits below what needs a person and starts calm', async () => {
  const sections = await page.$$eval('main > section', (all) => all.map((s) => s.id));
  assert.ok(sections.indexOf('intercom') > sections.indexOf('history'), sections.join());
  assert.deepEqual(sections.slice(0, 3), ['needs', 'status', 'history']);
  assert.equal(await page.locator('#ic-live-empty').isVisible(), true);
  assert.equal(await page.locator('#ic-pick').textContent(), 'Pick a session or a group.');
});

test('"New session" is an explicit request that becomes a Ticket and its session', async () => {
  // Tess used the panel before: the page remembers her name (what it records as who asked).
  await page.evaluate(() => localStorage.setItem('superagent.name', 'Tess'));
  await openSession('Write the release notes for 0.3');
  await openSession('Check the links in README');
  const o = await api('/api/intercom');
  assert.equal(o.sessions.length, 2);
  const t = await api(`/api/tickets/${o.sessions[0].ticket}`);
  assert.equal(t.mandate.source, 'panel');
  assert.equal(t.mandate.admission, 'panel_operator');
  assert.equal(t.mandate.strength, 'explicit');
  // The acknowledgement and the result are delivered in the panel, not left pending.
  // Polled through the API (a waitForFunction whose predicate is async returns a Promise, which
  // is truthy at once).
  const deadline = Date.now() + 15_000;
  for (;;) {
    const d = await api(`/api/tickets/${o.sessions[0].ticket}`);
    if (d.messages.length >= 2 && d.messages.every((m) => m.status === 'sent')) break;
    assert.ok(Date.now() < deadline, `messages still not sent: ${JSON.stringify(d.messages)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
});

test('a session shows its transcript; a person writes to it and the answer arrives live', async () => {
  await page.locator('#ic-live li', { hasText: 'Write the release notes' }).locator('button').click();
  await page.locator('#ic-feed li', { hasText: '[report: ready] Ready to work on: Write the release notes for 0.3' }).waitFor();
  assert.match(await page.locator('#ic-meta').textContent(), /session-1 · Ticket #\d+ · no model calls recorded · wake budget 3 of 3 left/);
  await page.locator('#ic-name').fill('Tess');
  await page.locator('#ic-text').fill('Please also thank the contributors.');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await page.locator('#ic-sent', { hasText: 'Sent (wake).' }).waitFor();
  assert.equal(await page.locator('#ic-text').inputValue(), '', 'a sent message leaves the composer');
  // The woken session's next turn read it (wrapped as the person's) and answered.
  await page.locator('#ic-feed li', { hasText: '[report: ready] Heard you: Please also thank the contributors.' }).waitFor();
  // Shown as she wrote it, with who wrote it: not the wrapper the session's model reads.
  const said = page.locator('#ic-feed li.user', { hasText: 'Please also thank the contributors.' }).first();
  await said.waitFor();
  assert.match(await said.innerText(), /Tess \(panel\) → the session/);
  assert.equal(await page.locator('#ic-feed li.user', { hasText: '<<<intercom-' }).count(), 0, 'no delimiters');
  assert.equal(await page.locator('#ic-feed li.user', { hasText: 'typed in the panel' }).count(), 0, 'no wrapper');
  // Its Ticket is ready: "idle" alone would hide that.
  await page.locator('#ic-status', { hasText: 'idle — Ticket ready' }).waitFor();
  assert.equal(await page.locator('#ic-feed li.user', { hasText: '"follow_ups"' }).count(), 0, 'what was said, not the task JSON');
  await page.locator('#intercom').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, 'intercom-session-1280x800-light.png') });
  // The worker transcript, with what the executor ran, is one click away.
  await page.locator('#ic-tools').check();
  await page.locator('#ic-feed li', { hasText: 'exit code 0' }).first().waitFor();
  await page.locator('#ic-tools').uncheck();
});

test('a group is created, filled and broadcast to', async () => {
  await page.locator('#ic-group-name').fill('release 0.3');
  await page.getByRole('button', { name: 'Create' }).click();
  await page.locator('#ic-title', { hasText: 'release 0.3' }).waitFor();
  // The selected session (the notes) became its first member; add the other one.
  await page.locator('#ic-members li', { hasText: 'Write the release notes' }).waitFor();
  await page.locator('#ic-members select').selectOption({ label: (await api('/api/intercom')).sessions.find((s) => /README/.test(s.title)).title });
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await page.locator('#ic-members li', { hasText: 'Check the links' }).waitFor();
  await page.locator('#ic-send', { hasText: 'Broadcast to 2 members' }).waitFor();
  await page.locator('#ic-text').fill('We ship 0.3 on Friday.');
  await page.locator('#ic-send').click();
  await page.locator('#ic-sent', { hasText: 'Broadcast to 2 members.' }).waitFor();
  await page.locator('#ic-feed li.relay', { hasText: 'We ship 0.3 on Friday.' }).first().waitFor();
  await page.locator('#ic-feed li', { hasText: 'Heard you: We ship 0.3 on Friday.' }).first().waitFor();
  await page.locator('#intercom').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, 'intercom-group-1280x800-light.png') });
});

test('a refused send keeps the text and says exactly why', async () => {
  // The README session's Ticket is stopped in the panel: its session is dormant for good.
  const o = await api('/api/intercom');
  const readme = o.sessions.find((s) => /README/.test(s.title));
  const stopped = await page.evaluate(async (ticket) => {
    const s = await (await fetch('/api/session')).json();
    const r = await fetch(`/api/tickets/${ticket}/stop`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf_token }, body: JSON.stringify({ confirm: true, name: 'Tess' }) });
    return r.status;
  }, readme.ticket);
  assert.equal(stopped, 200);
  const item = page.locator('#ic-dormant li', { hasText: 'Check the links' });
  await item.waitFor();
  await item.locator('button').click();
  await page.locator('#ic-status', { hasText: 'dormant — Mandate withdrawn' }).waitFor();
  await page.locator('#ic-text').fill('Please come back for the docs/ links.');
  await page.locator('#ic-send').click();
  await page.locator('#ic-error', { hasText: 'cannot resume: its Mandate was withdrawn' }).waitFor();
  assert.equal(await page.locator('#ic-text').inputValue(), 'Please come back for the docs/ links.', 'the text is kept');
  // Its transcript stays readable.
  assert.ok(await page.locator('#ic-feed li', { hasText: 'Ready to work on: Check the links in README' }).count() > 0);
  await page.locator('#intercom').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, 'intercom-refused-1280x800-light.png') });
});

test('readable at 1280×800 and at phone width, in light and dark', async () => {
  for (const [width, height] of [[1280, 800], [390, 844]]) {
    for (const colorScheme of ['light', 'dark']) {
      await page.setViewportSize({ width, height });
      await page.emulateMedia({ colorScheme });
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `no sideways scrolling at ${width}px (overflow ${overflow}px)`);
      await page.locator('#intercom').scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(shots, `intercom-${width}x${height}-${colorScheme}.png`) });
    }
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.emulateMedia({ colorScheme: 'light' });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(shots, 'intercom-top-1280x800-light.png') });
});
