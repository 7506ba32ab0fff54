// Needs-you's verdict cards (issue 38) in a real browser: headless Debian Chromium driven by
// playwright-core, against a panel that tests/panel_verdicts_test.cpp started in-process over a
// store with would_accept Decisions the real Eval recorded in observe mode. Run by that C++ test,
// which passes the environment below; by hand:
//   PANEL_URL=… LOGIN_URL=… CHINESE_DECISION=… HOSTILE_DECISION=… node --test tests/browser/verdicts.test.mjs
// No fixed sleeps: every wait is for a condition in the page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium, newPage } from './chromium.mjs';

const url = process.env.PANEL_URL;
const login = process.env.LOGIN_URL;
const chinese = process.env.CHINESE_DECISION;
const hostileDecision = process.env.HOSTILE_DECISION;
const shots = process.env.SCREENSHOT_DIR || '/tmp/superagent-panel-screenshots';
for (const [k, v] of Object.entries({ PANEL_URL: url, LOGIN_URL: login, CHINESE_DECISION: chinese, HOSTILE_DECISION: hostileDecision })) {
  if (!v) throw new Error(`${k} is not set (tests/panel_verdicts_test.cpp sets it)`);
}
mkdirSync(shots, { recursive: true });

// A stranger's message that looks like markup: the page must show its characters.
const hostile = '<img src=x onerror="window.pwned=1"> the heading has a typo';

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

test('the rule\'s card lists its messages as text, with three answers each', async () => {
  const card = page.locator('#verdicts-slot article[data-rule="wording"]');
  await card.waitFor({ state: 'visible' });
  assert.equal(await card.locator('li[data-decision]').count(), 6);
  assert.match(await card.locator('.verdict-record').textContent(), /^So far: 0 yes, 0 no, 0 don't know; no yes or no answers yet/);
  const odd = card.locator(`li[data-decision="${hostileDecision}"]`);
  assert.equal(await odd.locator('blockquote').textContent(), hostile);
  assert.equal(await page.locator('#verdicts-slot img').count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  const item = card.locator(`li[data-decision="${chinese}"]`);
  assert.match(await item.locator('blockquote').textContent(), /标题拼错了.*🙏🏽$/);
  for (const name of ['Yes, a request', 'No', "Don't know"])
    assert.equal(await item.getByRole('button', { name, exact: true }).count(), 1, name);
  await card.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, 'verdicts-1280x800-light.png'), fullPage: true });
});

test('an answer leaves the card and is counted', async () => {
  const card = page.locator('#verdicts-slot article[data-rule="wording"]');
  await card.locator(`li[data-decision="${chinese}"]`).getByRole('button', { name: 'Yes, a request' }).click();
  await card.locator(`li[data-decision="${chinese}"]`).waitFor({ state: 'detached' });
  assert.equal(await card.locator('li[data-decision]').count(), 5);
  assert.match(await card.locator('.verdict-record').textContent(),
    /^So far: 1 yes, 0 no, 0 don't know; precision 100 % \(at least 21 % with 95 % confidence\) over 1 answer\.$/);
});
