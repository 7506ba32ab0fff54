// How the browser tests start Chromium and open the panel's page, in one place: headless Debian
// Chromium through playwright-core (CHROMIUM names another binary), a desktop viewport in the
// light scheme, and what the page logs as an error collected for the test to assert on.
import { chromium } from 'playwright-core';

export const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

// No sandbox (tests run as root in CI), and nothing that reaches the network on its own.
export function launchChromium() {
  return chromium.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

// A page in a fresh context (`options` add to or replace the viewport and scheme); its uncaught
// exceptions and console errors go into `errors`. A failed resource is not one: the tests provoke
// refusals (a 404 explain, a 409, the intercom's 503) on purpose.
export async function newPage(browser, errors, timeout = 10_000, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light', ...options });
  const page = await context.newPage();
  page.setDefaultTimeout(timeout);
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) errors.push(m.text()); });
  return page;
}

// Chromium with the panel open and logged in through `login` (the link `superagent panel-url`
// prints), once the page has loaded its first data; `errors` collects what the page logs.
export async function openPanel(login, errors) {
  const browser = await launchChromium();
  const page = await newPage(browser, errors);
  await page.goto(login);
  await page.locator('body[data-loaded]').waitFor();
  return { browser, page };
}
