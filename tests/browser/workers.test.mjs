// The Workers view (issue 36) in a real browser: headless Debian Chromium driven by
// playwright-core, against a panel that tests/panel_workers_test.cpp started in-process over a
// fake pool (the pool's own behaviour has its tests in exec_*; this is the page). Run by that C++
// test, which passes the environment below; by hand:
//   PANEL_URL=… LOGIN_URL=… node --test tests/browser/workers.test.mjs
// No fixed sleeps: every wait is for a condition in the page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium, newPage } from './chromium.mjs';

const url = process.env.PANEL_URL;
const login = process.env.LOGIN_URL;
const shots = process.env.SCREENSHOT_DIR || '/tmp/superagent-panel-screenshots';
for (const [k, v] of Object.entries({ PANEL_URL: url, LOGIN_URL: login })) {
  if (!v) throw new Error(`${k} is not set (tests/panel_workers_test.cpp sets it)`);
}
mkdirSync(shots, { recursive: true });

// A name the pool's wire would refuse, shown anyway: the page must treat every name as text.
const hostile = '<img src=x onerror="window.pwned=1">';

let browser;
let page;
const errors = [];

before(async () => {
  browser = await launchChromium();
  // The panel runs no intercom here: /api/intercom's 503 is expected.
  page = await newPage(browser, errors);
  await page.goto(login);
  assert.equal(page.url(), url, 'the login link redirects to the panel');
  await page.locator('#live.on').waitFor();
  await page.locator('body[data-loaded]').waitFor();
});

after(async () => {
  await browser?.close();
  assert.deepEqual(errors, [], 'the page logged no errors');
});

test('the Workers view shows each worker as text, with its leases, Tickets and heartbeat', async () => {
  const workers = page.locator('#workers');
  await workers.waitFor({ state: 'visible' });
  const row = page.locator('#workers-list tr[data-worker="gpu-box.01"]');
  assert.equal(await row.locator('.worker-name').textContent(), 'gpu-box.01');
  assert.equal(await row.locator('td').nth(1).textContent(), 'claude-code, codex');
  assert.equal(await row.locator('.leases-used').textContent(), '1/2');
  assert.equal(await row.getByRole('button', { name: '#7' }).count(), 1);
  assert.match(await row.locator('.heartbeat').textContent(), /^last heartbeat \d+ s ago$/);
  assert.match(await page.locator('#workers-summary').textContent(), /^3 workers connected · 1 of 4 slots in use$/);
  assert.match(await page.locator('#workers-queue li[data-executor="codex"]').textContent(), /^codex: 3 waiting · 0 running · 2 free slots$/);

  // The hostile name is its characters, not markup.
  const odd = page.locator('#workers-list tr').filter({ hasText: 'onerror' });
  assert.equal(await odd.locator('.worker-name').textContent(), hostile);
  assert.equal(await page.locator('#workers img').count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  await workers.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, 'workers-1280x800-light.png'), fullPage: true });
});

test('Revoke asks first, then the worker is revoked', async () => {
  const row = page.locator('#workers-list tr[data-worker="gpu-box.01"]');
  await row.getByRole('button', { name: 'Revoke worker gpu-box.01' }).click();
  const dialog = page.locator('#revoke-dialog');
  await dialog.waitFor({ state: 'visible' });
  assert.equal(await page.locator('#revoke-title').textContent(), 'Revoke worker gpu-box.01?');
  assert.match(await page.locator('#revoke-what').textContent(), /ticket-7/);
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'hidden' });

  await row.getByRole('button', { name: 'Revoke worker gpu-box.01' }).click();
  await page.locator('#revoke-name').fill('Tess');
  await dialog.getByRole('button', { name: 'Revoke worker' }).click();
  await dialog.waitFor({ state: 'hidden' });
  // The fake pool forgets a revoked worker, as the real one does: the row goes.
  await row.waitFor({ state: 'detached' });
});
