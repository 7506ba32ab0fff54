// History by repository (issue 37) in a real browser: headless Debian Chromium driven by
// playwright-core, against a panel tests/panel_repos_test.cpp started in-process with Tickets in
// acme/widgets and acme/api. By hand: PANEL_URL=… LOGIN_URL=… node --test tests/browser/repos.test.mjs
// No fixed sleeps: every wait is for a condition in the page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { openPanel } from './chromium.mjs';

const url = process.env.PANEL_URL;
const login = process.env.LOGIN_URL;
const one = process.env.ONE_REPOSITORY === '1';
for (const [k, v] of Object.entries({ PANEL_URL: url, LOGIN_URL: login })) {
  if (!v) throw new Error(`${k} is not set (tests/panel_repos_test.cpp sets it)`);
}

const shots = process.env.SCREENSHOT_DIR || '/tmp/superagent-panel-screenshots';
mkdirSync(shots, { recursive: true });
const errors = [];
let browser;
let page;

before(async () => {
  ({ browser, page } = await openPanel(login, errors));
  await page.locator('#tickets li').first().waitFor();
});

after(async () => {
  await browser?.close();
  // The panel runs no intercom here: its 503 is not an error of the page.
  assert.deepEqual(errors.filter((e) => !/intercom/.test(e)), [], 'the page logged no errors');
});

test('one repository: no repository chips', { skip: !one }, async () => {
  assert.equal(await page.locator('#repo-filter').isHidden(), true);
  assert.equal(await page.locator('#repo-filter .chip').count(), 0);
});

test('each repository is a chip; choosing one lists its Tickets only', { skip: one }, async () => {
  const chips = page.locator('#repo-filter .chip');
  assert.deepEqual(await chips.allInnerTexts(), ['Every repository', 'acme/widgets', 'Acme/API']);
  assert.equal(await page.locator('#tickets li').count(), 2);
  await page.locator('#repo-filter .chip[data-repo="acme/api"]').click();
  await page.locator('#repo-filter .chip[data-repo="acme/api"][aria-pressed="true"]').waitFor();
  await page.locator('#tickets li').nth(1).waitFor({ state: 'detached' });

  const rows = await page.locator('#tickets li').allInnerTexts();
  assert.equal(rows.length, 1);
  assert.match(rows[0], /on GitHub issue acme\/api#2/);
  // Its pull requests, one in each repository, each named with its repository; its detail lists
  // the repositories its Mandate may change, in merge order.
  assert.match(rows[0], /PR acme\/api#7 open/);
  assert.match(rows[0], /PR acme\/widgets#42 open/);
  await page.locator('#tickets li .ticket-head').first().click();
  await page.locator('#tickets li .detail').first().waitFor();
  assert.match(await page.locator('#tickets li .detail').first().innerText(), /Repositories\s+acme\/api → acme\/widgets/);
  await page.screenshot({ path: `${shots}/repos-ticket-across-repositories.png`, fullPage: true });
  await page.locator('#tickets li .ticket-head').first().click();
  // A refresh keeps the choice.
  await page.evaluate(() => window.dispatchEvent(new Event('focus')));
  await page.locator('#repo-filter .chip[data-repo="acme/api"][aria-pressed="true"]').waitFor();
  await page.locator('#repo-filter .chip[data-repo="all"]').click();
  await page.locator('#tickets li').nth(1).waitFor();
  assert.equal(await page.locator('#tickets li').count(), 2);
});

test('how often each repository is read, and the hour\'s requests', { skip: one }, async () => {
  const text = await page.locator('#github-reading').innerText();
  assert.match(text, /1 repository every 60 s \(someone waits on it\)/);
  assert.match(text, /1 repository every 10 min \(quiet\)/);
  assert.match(text, /12 requests counted in the last hour of 2500 allowed/);
  assert.match(text, /GitHub: 4988 of 5000 left/);
  await page.locator('#sources details summary', { hasText: 'Each repository (2)' }).click();
  const rows = await page.locator('#sources tr[data-repo]').allInnerTexts();
  assert.equal(rows.length, 2);
  assert.match(rows.find((r) => r.startsWith('acme/widgets')), /10 min\s+quiet/);
});

test('with many read paths, what fails and the platform\'s own are shown, the rest folded', { skip: one }, async () => {
  const shown = await page.locator('#sources > .table-wrap tr[data-source]').evaluateAll((rows) => rows.map((r) => r.dataset.source));
  assert.deepEqual(shown.sort(), ['github:acme/docs:issues', 'github:notifications']);
  const folded = page.locator('#sources details.read-paths');
  assert.equal(await folded.locator('summary').innerText(), 'Every other read path (14, each working)');
  // The reading comes before the read paths.
  const order = await page.locator('#sources').evaluate((box) => [...box.children].map((c) => c.id || c.className || c.tagName));
  assert.ok(order.indexOf('reading-box') >= 0 && order.indexOf('reading-box') < order.indexOf('table-wrap'), order.join(','));
});
