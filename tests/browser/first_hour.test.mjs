// The first hour of a new team (issue 24), driven by tests/first_hour_browser_test.cpp in two
// phases around `superagent init` and a restart:
//   PHASE=setup  a daemon with nothing set up: Needs-you shows one Set-up card per missing piece;
//   PHASE=work   the daemon on init's files: calm; alice's signed mention arrives by webhook; one
//                acknowledgement; the worker's question answered in place; the result.
// Screenshots of each step go to SCREENSHOT_DIR as first-hour-N-*.png. No fixed sleeps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium, newPage } from './chromium.mjs';

const phase = process.env.PHASE;
const url = process.env.PANEL_URL;
const bin = process.env.SUPERAGENT_BIN;
const config = process.env.SUPERAGENT_CONFIG;
const shots = process.env.SCREENSHOT_DIR || '/tmp/superagent-panel-screenshots';
for (const [k, v] of Object.entries({ PHASE: phase, PANEL_URL: url, SUPERAGENT_BIN: bin, SUPERAGENT_CONFIG: config })) {
  if (!v) throw new Error(`${k} is not set (tests/first_hour_browser_test.cpp sets it)`);
}
mkdirSync(shots, { recursive: true });

let browser;
let page;
const errors = [];
const api = async (path) => (await page.request.get(new URL(path, url).href)).json();
// Polls `check` (an async predicate over the API) until it holds; fails saying `what` after `ms`.
// The failure shows the Tickets as the API last gave them.
async function until(what, check, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) {
      const t = await api('/api/tickets');
      const detail = t.tickets.length ? await api(`/api/tickets/${t.tickets[0].id}`) : null;
      assert.fail(`timed out waiting for ${what}; the Ticket: ${JSON.stringify(detail && { stage: detail.stage, messages: detail.messages, assignments: detail.assignments })}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
const shot = (name) => page.screenshot({ path: join(shots, `first-hour-${name}.png`), fullPage: true });

before(async () => {
  browser = await launchChromium();
  page = await newPage(browser, errors, 15_000);
  // The login link, as the README says: `superagent panel-url --config …`.
  const link = spawnSync(bin, ['panel-url', '--config', config], { encoding: 'utf8' });
  assert.equal(link.status, 0, link.stderr);
  await page.goto(link.stdout.trim());
  await page.locator('body[data-loaded]').waitFor();
});

after(async () => {
  await browser?.close();
  assert.deepEqual(errors, [], 'the page logged no errors');
});

if (phase === 'setup') {
  test('a daemon with nothing set up says so, one card per missing piece, each with its fix', async () => {
    const cards = page.locator('#setup-slot article');
    await cards.first().waitFor();
    const pieces = await cards.evaluateAll((all) => all.map((a) => a.dataset.piece));
    assert.deepEqual(pieces, ['sources', 'model', 'execution']);
    assert.match(await cards.nth(0).innerText(), /Nothing reaches the daemon[\s\S]*superagent init/);
    assert.match(await cards.nth(1).innerText(), /DEEPSEEK_API_KEY=/);
    assert.match(await cards.nth(2).innerText(), /github\.repo, or execution\.git_remote/);
    assert.equal(await page.locator('#needs-empty').isVisible(), false, 'not "Nothing needs you"');
    await shot('1-set-up-cards');
  });
}

if (phase === 'work') {
  test('set up by init and restarted, the daemon is calm', async () => {
    await page.locator('#needs-empty').waitFor({ state: 'visible' });
    assert.equal(await page.locator('#setup-slot article').count(), 0);
    await shot('2-calm-after-init');
  });

  test('alice mentions the agent on GitHub: one acknowledgement', async () => {
    const body = readFileSync(process.env.MENTION_BODY, 'utf8');
    const r = await page.request.post(new URL('/hooks/github', url).href, {
      headers: { 'Content-Type': 'application/json', 'X-GitHub-Event': 'issue_comment', 'X-GitHub-Delivery': 'first-hour-1',
        'X-Hub-Signature-256': process.env.MENTION_SIGNATURE },
      data: body,
    });
    assert.equal(r.status(), 200, await r.text());
    const row = page.locator('#tickets li', { hasText: 'asked by alice on GitHub issue codertocat/hello-world#1' });
    await row.waitFor();
    await until('the acknowledgement to be sent', async () => {
      const t = await api('/api/tickets');
      if (t.tickets.length !== 1) return false;
      const d = await api(`/api/tickets/${t.tickets[0].id}`);
      return d.messages.filter((m) => m.kind === 'acknowledgement' && m.status === 'sent').length === 1;
    });
    await shot('3-acknowledged');
  });

  test('the worker asks which README; the question is answered in place', async () => {
    const card = page.locator('#question-slot .question-card');
    await card.waitFor();
    assert.match(await card.innerText(), /Which README should I fix\?/);
    assert.match(await card.locator('.request-context').innerText(), /Asked for by alice on GitHub issue codertocat\/hello-world#1/);
    assert.match(await card.locator('.request-quote').innerText(), /please fix the typo in README 🙏/);
    await shot('4-question');
    await card.getByText('README.md', { exact: true }).click();
    const name = card.locator('input[name="name"]');
    if (await name.count()) await name.fill('Tess');
    await card.getByRole('button', { name: 'Send answer' }).click();
    await card.waitFor({ state: 'detached' });
  });

  test('the result is posted once, and Needs-you is calm again', async () => {
    const t = (await api('/api/tickets')).tickets[0];
    await until('the result to be sent', async () => {
      const d = await api(`/api/tickets/${t.id}`);
      return d.stage === 'ready' && d.messages.some((m) => m.kind === 'result' && m.status === 'sent');
    });
    const d = await api(`/api/tickets/${t.id}`);
    assert.equal(d.messages.filter((m) => m.kind === 'result').length, 1);
    assert.match(d.messages.find((m) => m.kind === 'result').body, /Fixed the typo in README\.md\./);
    await page.locator('#needs-empty').waitFor({ state: 'visible' });
    await page.locator(`#tickets li[data-ticket="${t.id}"] .ticket-head`).click();
    await page.locator(`#tickets li[data-ticket="${t.id}"] .detail`, { hasText: 'Fixed the typo in README.md.' }).waitFor();
    await shot('5-result');
  });
}
